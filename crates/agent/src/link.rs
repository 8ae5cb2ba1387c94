//! WAN emulation in user space (the kernel's netem is not available
//! here), one mechanism for either end: an [`End`] is one connection's end
//! of an emulated link, owned by whoever has the link — the origin server
//! for `servers.link` (PolyMix), the robot for `robots.link` (WebAxe-4).
//!
//! The model: every packet takes `delay` one way and is lost with
//! probability `loss`; a lost packet costs a retransmission timeout. A new
//! connection's handshake (SYN, SYN-ACK) costs two one-way delays before
//! the request can travel; the request itself one more. A response passes
//! in TCP slow-start [`Rounds`]: the first window (10 segments of 1460
//! bytes) one delay after it is sent, and each further round, with a
//! doubled window, a round trip later for the acknowledgements.
//!
//! The server's end holds the request until it has travelled and writes
//! each round after its wait; the robot's end holds the request back by the
//! same travel time and holds each round's bytes for its wait once they
//! arrive, reading no further than the round's window meanwhile.
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
        let mut rounds = Rounds::new(*self);
        let mut out = Vec::new();
        let mut left = bytes;
        loop {
            let n = left.min(rounds.room());
            out.push((rounds.pass(rng, n), n));
            left -= n;
            if left == 0 {
                return out;
            }
        }
    }
}

/// A response's slow-start rounds as its bytes pass one end of the link,
/// in pieces of at most [`room`](Self::room) bytes: a piece that opens a
/// round waits the round's delay (one way for the first, a round trip for
/// each later one, whose window doubles), and every segment a piece
/// completes may be lost, costing a retransmission timeout.
#[derive(Debug, Clone, Copy)]
pub struct Rounds {
    link: Link,
    /// Window of the next round.
    window: u64,
    /// Bytes the current round may still carry.
    left: u64,
    /// Bytes passed so far; segments are counted over them.
    passed: u64,
    opened: bool,
}

impl Rounds {
    pub fn new(link: Link) -> Rounds {
        Rounds {
            link,
            window: INITIAL_WINDOW * MSS,
            left: 0,
            passed: 0,
            opened: false,
        }
    }

    /// Most bytes the next piece may carry: the rest of the current round,
    /// or the next round's window.
    pub fn room(&self) -> u64 {
        if self.left > 0 {
            self.left
        } else {
            self.window
        }
    }

    /// `n` bytes (at most [`room`](Self::room)) pass: how long they wait.
    pub fn pass(&mut self, rng: &mut SimRng, n: u64) -> Duration {
        let mut wait = Duration::ZERO;
        if self.left == 0 {
            wait = if self.opened {
                2 * self.link.delay
            } else {
                self.link.delay
            };
            self.opened = true;
            self.left = self.window;
            self.window *= 2;
        }
        let n = n.min(self.left);
        self.left -= n;
        let before = self.passed.div_ceil(MSS);
        self.passed += n;
        let after = self.passed.div_ceil(MSS).max(1);
        wait + self.link.lost(rng, after - before, RTO)
    }
}

/// One connection's end of an emulated link: its own random draws, the
/// handshake a new connection still owes, and the rounds of the response
/// under way.
#[derive(Debug)]
pub struct End {
    link: Link,
    rng: SimRng,
    setup: Option<Duration>,
    rounds: Rounds,
}

impl End {
    /// A new connection's end (its handshake is owed by the first request).
    pub fn new(link: Link, mut rng: SimRng) -> End {
        End {
            setup: Some(link.setup(&mut rng)),
            rounds: Rounds::new(link),
            link,
            rng,
        }
    }

    /// How long a request of `bytes` travels, with the handshake on a new
    /// connection's first one; the response to it starts its rounds anew.
    pub fn request(&mut self, bytes: u64) -> Duration {
        self.rounds = Rounds::new(self.link);
        self.setup.take().unwrap_or_default() + self.link.request(&mut self.rng, bytes)
    }

    /// The response's rounds for its `bytes`, as the sender paces them:
    /// for each, the wait before it and its bytes.
    pub fn response(&mut self, bytes: u64) -> Vec<(Duration, u64)> {
        self.link.response(&mut self.rng, bytes)
    }

    /// Most response bytes the receiver may take before its next wait.
    pub fn room(&self) -> u64 {
        self.rounds.room()
    }

    /// The receiver took `n` response bytes (at most [`room`](Self::room)):
    /// how long to hold them.
    pub fn pass(&mut self, n: u64) -> Duration {
        self.rounds.pass(&mut self.rng, n)
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
    fn a_receiver_holds_each_round_as_the_sender_paces_it() {
        // The robot's end reads what arrives in pieces of its own sizes;
        // the waits add up to the sender's rounds over the same bytes.
        let l = link(40.0, 0.0);
        let mut end = End::new(l, stream(3, Stream::Conns(0)));
        // A new connection: the handshake, then the request.
        assert_eq!(end.request(300), Duration::from_millis(120));
        assert_eq!(end.request(300), Duration::from_millis(40));
        let mut left = 100 * 1024u64;
        let mut held = Duration::ZERO;
        let mut pieces = 0;
        while left > 0 {
            // Reads of at most 4 KB, never past the round.
            let n = left.min(end.room()).min(4096);
            held += end.pass(n);
            left -= n;
            pieces += 1;
        }
        assert!(pieces > 4);
        let sent: Duration = l
            .response(&mut stream(1, Stream::Server(0)), 100 * 1024)
            .iter()
            .map(|r| r.0)
            .sum();
        assert_eq!(held, sent);
        assert_eq!(held, Duration::from_millis(40 + 3 * 80));
        // The next response starts its slow start anew.
        end.request(300);
        assert_eq!(end.room(), INITIAL_WINDOW * MSS);
        assert_eq!(end.pass(1000), Duration::from_millis(40));
        assert_eq!(end.pass(460), Duration::ZERO);
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
        // Received in pieces, every segment risks the same loss: 100
        // segments at 5% and 200 ms each, 1 s on average beyond the waits.
        let mut end = End::new(l, stream(4, Stream::Conns(0)));
        let n = 2_000;
        let mut extra = Duration::ZERO;
        for _ in 0..n {
            end.request(100);
            let mut left = 100 * MSS;
            while left > 0 {
                let k = left.min(end.room()).min(1000);
                extra += end.pass(k);
                left -= k;
            }
            // The waits themselves: 1 + 3 round trips (10, 20, 40, 30 segments).
            extra -= Duration::from_millis(1 + 3 * 2);
        }
        let mean_ms = extra.as_secs_f64() * 1000.0 / f64::from(n);
        assert!((mean_ms - 1000.0).abs() < 60.0, "{mean_ms}");
    }
}
