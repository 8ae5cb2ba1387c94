//! The Collector's hit: the recorded miss, replayed (SPE, Section 3.4).
//!
//! The head goes out when the origin's first byte arrived on the miss
//! (measured from the request's arrival); the body follows in pieces,
//! each due when its share of the recorded transfer time has passed, so
//! the last byte leaves when it left on the miss. Deadlines are absolute,
//! so a late wake-up is made up by the next piece rather than adding up
//! (the paper's "rest of size over rest of time" rule). The sleeps use a
//! timerfd, not the runtime's 1 ms timer wheel.

use crate::send::send;
use cacheoff_cache::Timing;
use cacheoff_timer::PreciseTimer;
use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// Body pieces: about one per 16 KB, at most 64.
fn pieces(len: usize) -> usize {
    len.div_ceil(16 * 1024).clamp(1, 64)
}

async fn sleep_until(timer: &mut Option<PreciseTimer>, due: Instant) -> io::Result<()> {
    match timer {
        Some(t) => t.sleep_until(due).await,
        None => {
            tokio::time::sleep_until(due.into()).await;
            Ok(())
        }
    }
}

/// Writes `head` and `body` to `s` with the timing of the recorded miss.
pub async fn paced(
    s: &mut TcpStream,
    head: &[u8],
    body: &[u8],
    timing: Timing,
    t0: Instant,
    idle: Duration,
) -> io::Result<()> {
    let mut timer = PreciseTimer::new().ok();
    let start = t0 + timing.first_byte;
    sleep_until(&mut timer, start).await?;
    send(s, head, idle).await?;
    if body.is_empty() {
        return Ok(());
    }
    let n = pieces(body.len());
    let size = body.len().div_ceil(n);
    let mut sent = 0usize;
    for piece in body.chunks(size) {
        sent += piece.len();
        let share = sent as f64 / body.len() as f64;
        sleep_until(&mut timer, start + timing.transfer.mul_f64(share)).await?;
        send(s, piece, idle).await?;
    }
    Ok(())
}

/// Differences between a hit's service time and its object's miss (and
/// the previous hit), in microseconds: the Collector's precision.
/// Locking: one mutex, taken once per Collector hit.
#[derive(Default)]
pub struct ReplayStats {
    inner: Mutex<Precision>,
}

struct Precision {
    miss_hit: Histogram<u64>,
    hit_hit: Histogram<u64>,
    /// The last hit's service time per object, for hit-to-hit spread.
    last_hit: HashMap<u64, Duration>,
}

impl Default for Precision {
    fn default() -> Precision {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
        Precision {
            miss_hit: h(),
            hit_hit: h(),
            last_hit: HashMap::new(),
        }
    }
}

/// Mean and median |miss - hit| and |hit - hit| over the hits so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayPrecision {
    pub hits: u64,
    pub miss_hit_mean_ms: f64,
    pub miss_hit_median_ms: f64,
    pub hit_pairs: u64,
    pub hit_hit_mean_ms: f64,
    pub hit_hit_median_ms: f64,
}

/// Objects remembered for hit-to-hit pairs; beyond this the table starts over.
const MAX_REMEMBERED: usize = 1 << 20;

impl ReplayStats {
    pub fn record(&self, key: u64, miss: Duration, hit: Duration) {
        let mut p = self.inner.lock().expect("replay stats lock");
        let us = |d: Duration| (d.as_micros() as u64).max(1);
        let _ = p.miss_hit.record(us(miss.abs_diff(hit)));
        if p.last_hit.len() >= MAX_REMEMBERED {
            p.last_hit.clear();
        }
        if let Some(prev) = p.last_hit.insert(key, hit) {
            let _ = p.hit_hit.record(us(prev.abs_diff(hit)));
        }
    }

    pub fn precision(&self) -> ReplayPrecision {
        let p = self.inner.lock().expect("replay stats lock");
        let ms = |us: f64| us / 1000.0;
        ReplayPrecision {
            hits: p.miss_hit.len(),
            miss_hit_mean_ms: ms(p.miss_hit.mean()),
            miss_hit_median_ms: ms(p.miss_hit.value_at_quantile(0.5) as f64),
            hit_pairs: p.hit_hit.len(),
            hit_hit_mean_ms: ms(p.hit_hit.mean()),
            hit_hit_median_ms: ms(p.hit_hit.value_at_quantile(0.5) as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_go_in_about_16kb_pieces_at_most_64() {
        assert_eq!(pieces(1), 1);
        assert_eq!(pieces(16 * 1024), 1);
        assert_eq!(pieces(16 * 1024 + 1), 2);
        assert_eq!(pieces(100 << 20), 64);
    }
}
