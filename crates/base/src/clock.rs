//! Wall-clock time as an input: code that judges ages and expiry asks a
//! [`Clock`], so tests move a [`ManualClock`] instead of sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time in Unix seconds (HTTP dates have no finer grain).
pub trait Clock: Send + Sync {
    fn unix_now(&self) -> u64;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn unix_now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(unix_secs: u64) -> ManualClock {
        ManualClock(AtomicU64::new(unix_secs))
    }

    pub fn advance(&self, secs: u64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn unix_now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
