//! How long a keep-alive connection may wait for its next request
//! ([`IdleTimer`]). The body's pace, the buffered-upload budget and the
//! cap on client connections are `cacheoff_access`'s (`BodyClock`,
//! `Budget`, `Slots`), shared with the Multiplier.

use std::time::{Duration, Instant};

/// The wait of one connection for its next request, bounded by the idle
/// timeout with one timer for the connection's life instead of one per
/// request: a timer set and cancelled for every request would move an
/// entry in the runtime's timer wheel each time (about a tenth of the
/// proxy's own instructions per hit). The timer is set when a wait first
/// blocks; when it fires, the wait that is under way then is timed from
/// its own start and the timer set again for what is left, if anything.
pub(crate) struct IdleTimer {
    limit: Duration,
    since: Instant,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl IdleTimer {
    pub(crate) fn new(limit: Duration) -> IdleTimer {
        IdleTimer {
            limit,
            since: Instant::now(),
            sleep: None,
        }
    }

    /// A wait for the next request starts now.
    pub(crate) fn start(&mut self) {
        self.since = Instant::now();
    }

    /// Resolves once the current wait has lasted the idle limit.
    pub(crate) async fn expired(&mut self) {
        loop {
            let due = (self.since + self.limit).into();
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
            // Its deadline is never later than `due` (waits only start
            // later); one that fired for an earlier wait is set again.
            if sleep.is_elapsed() {
                sleep.as_mut().reset(due);
            }
            sleep.as_mut().await;
            if Instant::now() >= self.since + self.limit {
                return;
            }
        }
    }
}
