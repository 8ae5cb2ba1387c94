//! A precise async sleep, for the pacer and the Collector.
//!
//! Tokio's timer wheel has 1 ms ticks and rounds deadlines up, which would
//! make every open-loop request about 1 ms late and bias corrected
//! latency. A `timerfd` on `CLOCK_MONOTONIC` (the clock behind `Instant`)
//! fires within microseconds and wakes the runtime through its I/O driver.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::Poll;
use std::time::Instant;
use tokio::io::unix::AsyncFd;

pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    /// A reading of the monotonic clock and the `Instant` taken with it.
    base_ts: libc::timespec,
    base: Instant,
    /// The deadline the timerfd is set to, until it fires or is reset.
    armed: Option<Instant>,
}

fn monotonic_now() -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

impl PreciseTimer {
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let base = Instant::now();
        let base_ts = monotonic_now();
        // SAFETY: the timer owns `fd` and keeps it open while registered.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(io::Error::from)?;
        Ok(PreciseTimer {
            fd,
            base_ts,
            base,
            armed: None,
        })
    }

    /// Sets the timerfd to fire at `deadline` (absolute monotonic time).
    fn arm(&mut self, deadline: Instant) -> io::Result<()> {
        let ahead = deadline.saturating_duration_since(self.base);
        let nanos = self.base_ts.tv_nsec as u128 + ahead.as_nanos() % 1_000_000_000;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: self.base_ts.tv_sec
                    + ahead.as_secs() as libc::time_t
                    + (nanos / 1_000_000_000) as libc::time_t,
                tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid descriptor and itimerspec; absolute monotonic time.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = Some(deadline);
        Ok(())
    }

    /// Sleeps until `deadline` (returns at once if it has passed).
    ///
    /// Every poll reads the clock first, so a caller polled often (a busy
    /// thread) returns on time without waiting for the timer's wake-up,
    /// and the timerfd is set again only for a new deadline.
    pub async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        if deadline <= Instant::now() {
            return Ok(());
        }
        if self.armed != Some(deadline) {
            self.arm(deadline)?;
        }
        std::future::poll_fn(|cx| loop {
            if Instant::now() >= deadline {
                return Poll::Ready(Ok(()));
            }
            let mut guard = match self.fd.poll_read_ready(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(g)) => g,
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer.
            let n = unsafe {
                libc::read(
                    guard.get_inner().as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    8,
                )
            };
            guard.clear_ready();
            if n == 8 {
                // Fired: for this deadline (then the clock says so above) or
                // for an earlier one, in which case it is set again.
                self.armed = None;
                if Instant::now() < deadline {
                    if let Err(e) = self.arm(deadline) {
                        return Poll::Ready(Err(e));
                    }
                }
            }
        })
        .await
    }
}

/// Asks the kernel to wake this thread's timers on time instead of
/// batching them within its default 50 µs slack.
pub fn lower_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer; it only affects
    // the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ns(ts: &libc::timespec) -> i128 {
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    }

    #[test]
    fn never_wakes_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = PreciseTimer::new().unwrap();
            for i in 0..20u64 {
                let due = Instant::now() + Duration::from_micros(300 + 137 * i);
                t.sleep_until(due).await.unwrap();
                assert!(Instant::now() >= due, "woke early");
            }
        });
    }

    /// Tokio's wheel rounds a deadline up to its next 1 ms tick; this
    /// timer asks the kernel for the deadline itself, to the nanosecond,
    /// so how late a wake-up comes is the scheduler's alone (a busy
    /// machine's; `bench/` measures it on a quiet one). Read back from
    /// the kernel before it fires, whatever the machine's speed.
    #[test]
    fn the_kernel_timer_is_armed_at_the_deadline_to_the_nanosecond() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = PreciseTimer::new().unwrap();
            let (fd, base, base_ts) = (t.fd.as_raw_fd(), t.base, t.base_ts);
            for extra_ns in [0u64, 123_457, 999_999_999] {
                let due = Instant::now() + Duration::from_secs(30) + Duration::from_nanos(extra_ns);
                let expiry = ns(&base_ts) + (due - base).as_nanos() as i128;
                let mut sleep = std::pin::pin!(t.sleep_until(due));
                // One poll arms the timer; the sleep itself is 30 s away.
                tokio::select! {
                    biased;
                    _ = &mut sleep => panic!("woke 30 s early"),
                    _ = std::future::ready(()) => {}
                }
                let mut cur = libc::itimerspec {
                    it_interval: libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                    it_value: libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                };
                let before = ns(&monotonic_now());
                // SAFETY: the timer's own open descriptor and a valid
                // itimerspec to fill.
                let rc = unsafe { libc::timerfd_gettime(fd, &mut cur) };
                let after = ns(&monotonic_now());
                assert_eq!(rc, 0, "{}", io::Error::last_os_error());
                // Time left until the expiry, read between `before` and
                // `after`.
                let left = ns(&cur.it_value);
                assert!(
                    left >= expiry - after && left <= expiry - before,
                    "armed {left} ns ahead, the deadline is {}..={} ns ahead",
                    expiry - after,
                    expiry - before
                );
            }
        });
    }
}
