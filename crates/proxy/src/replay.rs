//! The Collector's hit: the recorded miss, replayed (SPE, Section 3.4).
//!
//! The head goes out when the origin's first byte arrived on the miss
//! (measured from the request's arrival); the body follows in pieces,
//! each due when its share of the recorded transfer time has passed, so
//! the last byte leaves when it left on the miss. Deadlines are absolute,
//! so a late wake-up is made up by the next piece rather than adding up
//! (the paper's "rest of size over rest of time" rule). The sleeps use a
//! timerfd, not the runtime's 1 ms timer wheel.

use cacheoff_cache::Timing;
use cacheoff_timer::PreciseTimer;
use std::io;
use std::time::Instant;
use tokio::io::AsyncWriteExt;
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
) -> io::Result<()> {
    let mut timer = PreciseTimer::new().ok();
    let start = t0 + timing.first_byte;
    sleep_until(&mut timer, start).await?;
    s.write_all(head).await?;
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
        s.write_all(piece).await?;
    }
    Ok(())
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
