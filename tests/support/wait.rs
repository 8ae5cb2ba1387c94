//! Readiness signals for tests: wait for what a run leaves behind instead
//! of sleeping a fixed time.

use std::path::Path;
use std::time::{Duration, Instant};

/// Polls `ready` until it holds; panics naming `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(
            t.elapsed() < limit,
            "gave up waiting for {what} after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Complete (newline-ended) lines in a run's `intervals.jsonl` so far.
pub fn intervals_written(run: &Path) -> usize {
    std::fs::read(run.join("intervals.jsonl"))
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Waits until the run in `run` has written `n` intervals.
pub fn wait_for_intervals(run: &Path, n: usize) {
    wait_until(
        &format!("{n} intervals in {}", run.display()),
        Duration::from_secs(60),
        || intervals_written(run) >= n,
    );
}
