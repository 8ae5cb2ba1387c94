//! Server-side WAN emulation in user space (the kernel's netem is not
//! available here).
//!
//! The model: every packet takes `delay` one way and is lost with
//! probability `loss`; a lost packet costs a retransmission timeout. A new
//! connection's handshake (SYN, SYN-ACK) costs two one-way delays before
//! the request can travel; the request itself one more. A response leaves
//! in TCP slow-start rounds: the first window (10 segments of 1460 bytes)
//! arrives one delay after it is sent, and each further round, with a
//! doubled window, waits a round trip for the acknowledgements.
//!
//! Limits: no bandwidth limit, no congestion avoidance after slow start, no
//! delayed ACKs, and losses cost a fixed timeout (1 s for handshake
//! packets, 200 ms otherwise) instead of fast retransmit.

use cacheoff_base::rng::{Rng, SimRng};
use cacheoff_workload::LinkConfig;
use std::time::Duration;

pub const MSS: u64 = 1460;
pub const INITIAL_WINDOW: u64 = 10;
const RTO: Duration = Duration::from_millis(200);
const SYN_RTO: Duration = Duration::from_secs(1);

/// One link's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    delay: Duration,
    loss: f64,
}

fn segments(bytes: u64) -> u64 {
    bytes.div_ceil(MSS).max(1)
}

impl Link {
    pub fn new(cfg: &LinkConfig) -> Link {
        Link {
            delay: cfg.delay.0,
            loss: cfg.loss,
        }
    }

    fn lost(&self, rng: &mut SimRng, packets: u64, rto: Duration) -> Duration {
        if self.loss <= 0.0 {
            return Duration::ZERO;
        }
        let lost = (0..packets)
            .filter(|_| rng.gen::<f64>() < self.loss)
            .count() as u32;
        rto * lost
    }

    /// The handshake of a new connection, before its first request leaves.
    pub fn setup(&self, rng: &mut SimRng) -> Duration {
        2 * self.delay + self.lost(rng, 2, SYN_RTO)
    }

    /// A request of `bytes` travelling to the server.
    pub fn request(&self, rng: &mut SimRng, bytes: u64) -> Duration {
        self.delay + self.lost(rng, segments(bytes), RTO)
    }

    /// A response of `bytes` in slow-start rounds: for each round, how long
    /// to wait before sending it and how many bytes it carries.
    pub fn response(&self, rng: &mut SimRng, bytes: u64) -> Vec<(Duration, u64)> {
        let mut rounds = Vec::new();
        let mut left = bytes;
        let mut window = INITIAL_WINDOW * MSS;
        let mut wait = self.delay;
        while left > 0 || rounds.is_empty() {
            let n = left.min(window);
            rounds.push((wait + self.lost(rng, segments(n), RTO), n));
            left -= n;
            window *= 2;
            wait = 2 * self.delay;
        }
        rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::rng::{stream, Stream};
    use cacheoff_base::Dur;

    fn link(ms: f64, loss: f64) -> Link {
        Link::new(&LinkConfig {
            delay: Dur::secs(ms / 1000.0),
            loss,
        })
    }

    #[test]
    fn slow_start_rounds_and_handshake() {
        let l = link(40.0, 0.0);
        let mut rng = stream(1, Stream::Server(0));
        assert_eq!(l.setup(&mut rng), Duration::from_millis(80));
        assert_eq!(l.request(&mut rng, 200), Duration::from_millis(40));
        // 1 KB: one round, one delay.
        assert_eq!(
            l.response(&mut rng, 1024),
            vec![(Duration::from_millis(40), 1024)]
        );
        // 100 KB = 71 segments: windows of 10, 20, 40 and the last 1.
        let r = l.response(&mut rng, 100 * 1024);
        let sizes: Vec<u64> = r.iter().map(|x| x.1).collect();
        assert_eq!(sizes, vec![14_600, 29_200, 58_400, 102_400 - 102_200]);
        let total: Duration = r.iter().map(|x| x.0).sum();
        assert_eq!(total, Duration::from_millis(40 + 3 * 80));
    }

    #[test]
    fn losses_cost_timeouts_at_the_configured_rate() {
        let l = link(1.0, 0.05);
        let mut rng = stream(2, Stream::Server(0));
        let n = 20_000;
        let extra: Duration = (0..n)
            .map(|_| l.request(&mut rng, 1000) - Duration::from_millis(1))
            .sum();
        let mean_ms = extra.as_secs_f64() * 1000.0 / f64::from(n);
        // One packet, 5% loss, 200 ms each: 10 ms on average.
        assert!((mean_ms - 10.0).abs() < 1.0, "{mean_ms}");
    }
}
