//! Readiness signals for tests: wait for what a run or a process leaves
//! behind (intervals on disk, a listening port, an exit, a count reached)
//! instead of sleeping a fixed time. The only sleep here is the polling
//! step.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// Polls `ready` until it holds (true) or `limit` has passed (false).
pub fn within(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while !ready() {
        if t.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Polls `ready` until it holds; panics naming `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, ready: impl FnMut() -> bool) {
    assert!(
        within(limit, ready),
        "gave up waiting for {what} after {limit:?}"
    );
}

/// Whether something accepts connections on `addr` now.
pub fn accepting(addr: SocketAddr) -> bool {
    TcpStream::connect(addr).is_ok()
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
