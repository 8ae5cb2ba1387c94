//! Readiness waits: poll a condition until it holds or a limit passes.
//! The only sleep is the polling step.

use std::time::{Duration, Instant};

const STEP: Duration = Duration::from_millis(10);

/// Polls `ready` until it holds (true) or `limit` has passed (false).
pub fn within(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(STEP);
    }
    true
}

/// Polls `ready` until it holds; panics naming `what` after `limit`.
pub fn until(what: &str, limit: Duration, ready: impl FnMut() -> bool) {
    assert!(
        within(limit, ready),
        "gave up waiting for {what} after {limit:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_that_comes_true_ends_the_wait_and_one_that_never_does_fails_it() {
        let mut polls = 0;
        assert!(within(Duration::from_secs(60), || {
            polls += 1;
            polls == 3
        }));
        assert_eq!(polls, 3);
        assert!(!within(Duration::from_millis(30), || false));
        let e = std::panic::catch_unwind(|| until("never", Duration::ZERO, || false));
        let e = e.unwrap_err();
        let text = e.downcast_ref::<String>().unwrap();
        assert!(text.starts_with("gave up waiting for never"), "{text}");
    }
}
