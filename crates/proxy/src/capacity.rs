//! A capacity on purpose (`ProxyConfig::capacity`): requests are let
//! through one queue no faster than a rate, each waiting for the proxy's
//! next free slot, so response time grows without bound above it as a
//! saturated server's does. The peak finder's known target.
//!
//! Ownership: one [`Gate`] shared by every worker. Its async mutex is
//! fair (first come, first served) and guards the time of the last
//! admission; a request holds it while it sleeps to its slot, so the
//! waiting requests are the queue. A request whose client went away
//! leaves the queue (its future is dropped), taking no slot.

use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::time::Instant;

#[derive(Debug)]
pub(crate) struct Gate {
    /// Time between admissions.
    spacing: Duration,
    /// The slot of the last admission.
    last: Mutex<Option<Instant>>,
}

impl Gate {
    /// A gate for `rate` requests a second.
    pub(crate) fn new(rate: f64) -> Gate {
        Gate {
            spacing: Duration::from_secs_f64(1.0 / rate.max(1e-3)),
            last: Mutex::new(None),
        }
    }

    /// Waits for this request's turn.
    pub(crate) async fn admit(&self) {
        let mut last = self.last.lock().await;
        // Slots on a time line of their own: a late wake-up (the timer's
        // millisecond) does not push every later slot back.
        let now = Instant::now();
        let slot = last.map_or(now, |t| (t + self.spacing).max(now));
        tokio::time::sleep_until(slot).await;
        *last = Some(slot);
    }

    /// Waits for the turn of a request from client `s`; false if the
    /// client closed its connection meanwhile.
    pub(crate) async fn admit_client(&self, s: &TcpStream) -> bool {
        let turn = self.admit();
        tokio::pin!(turn);
        let mut b = [0u8; 1];
        tokio::select! {
            () = &mut turn => true,
            r = s.peek(&mut b) => match r {
                Ok(0) | Err(_) => false,
                // More bytes (a pipelined request): keep waiting.
                Ok(_) => {
                    turn.await;
                    true
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn admissions_are_spaced_by_the_rate() {
        let gate = Arc::new(Gate::new(100.0));
        let t0 = Instant::now();
        let mut done = Vec::new();
        for _ in 0..5 {
            gate.admit().await;
            done.push(t0.elapsed());
        }
        let ms: Vec<u128> = done.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [0, 10, 20, 30, 40]);
        // Idle time earns no burst: the next is let through at once, the
        // one after it a slot later.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let t1 = Instant::now();
        gate.admit().await;
        gate.admit().await;
        assert_eq!(t1.elapsed().as_millis(), 10);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_requests_queue_and_a_dropped_one_leaves() {
        let gate = Arc::new(Gate::new(10.0));
        gate.admit().await;
        let t0 = Instant::now();
        let a = tokio::spawn({
            let g = gate.clone();
            async move {
                g.admit().await;
                Instant::now()
            }
        });
        tokio::task::yield_now().await;
        let b = tokio::spawn({
            let g = gate.clone();
            async move {
                g.admit().await;
                Instant::now()
            }
        });
        tokio::task::yield_now().await;
        let c = tokio::spawn({
            let g = gate.clone();
            async move {
                g.admit().await;
                Instant::now()
            }
        });
        tokio::task::yield_now().await;
        b.abort();
        let (a, c) = (a.await.unwrap(), c.await.unwrap());
        assert_eq!((a - t0).as_millis(), 100);
        assert_eq!((c - t0).as_millis(), 200);
    }
}
