//! The downtime test (seed 000 §6.2), automated: steady load on a product
//! whose cache is full, the power cut at the start of the dark phase
//! (SIGKILL to every process at once), restored at its end, and TTFM, TTFH
//! and the first accepted connection measured from the power-on instant,
//! to the millisecond (`firsts` of the run's entries).

use super::file::Downtime;
use anyhow::Context;
use cacheoff_base::{Dur, Rate};
use cacheoff_workload::{load, Overrides, PeakRate, Workload};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What can be switched off and on: a product under test.
pub trait PowerSwitch: Send {
    /// Kills every process of the product at once; nothing graceful.
    fn power_cut(&mut self) -> anyhow::Result<()>;
    /// Starts the product again with what it kept (its disk cache).
    fn power_on(&mut self) -> anyhow::Result<()>;
}

/// The downtime workload for a product whose servers are `main`'s (the
/// first of the same origin servers, so a surrogate's address map still
/// holds; few of them, so that the steady load revisits objects).
pub fn workload(main: &Workload, d: &Downtime) -> anyhow::Result<Workload> {
    let o = Overrides {
        rate: Some(PeakRate::from(d.rate)),
        robots: Some(robots_for(d.rate)),
        servers: Some(main.servers.count.min(DOWNTIME_SERVERS)),
        server_ips: Some(main.servers.first_ip),
        seed: Some(main.seed),
        ..Default::default()
    };
    let mut w = load("downtime", &o).context("the downtime workload")?;
    w.servers.http10 = main.servers.http10;
    let half = Dur::secs(d.warm.as_secs_f64() / 2.0);
    for p in &mut w.phases {
        p.duration = if p.dark {
            d.dark
        } else if p.measured {
            d.after
        } else {
            half
        };
    }
    w.plateau = Some(d.after);
    w.validate().context("the downtime workload")?;
    Ok(w)
}

/// Origin servers of the downtime test, at most (the built-in downtime
/// workload's count).
const DOWNTIME_SERVERS: u32 = 10;

/// Enough robots that none sends faster than 5 requests a second.
fn robots_for(rate: Rate) -> u32 {
    (rate.0 / 5.0).ceil().max(3.0) as u32
}

/// When the power went off and came back, in seconds of run time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    pub power_cut_s: f64,
    pub power_on_s: f64,
}

/// Cuts and restores the power on the run's schedule: started with the
/// run's time zero, it waits for the dark phase.
pub struct Switchboard {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<anyhow::Result<Outage>>,
}

impl Switchboard {
    /// Cuts the power `dark_at` after `start`, restores it `dark` later.
    pub fn start(
        switch: Arc<Mutex<dyn PowerSwitch>>,
        start: Instant,
        dark_at: Duration,
        dark: Duration,
    ) -> Switchboard {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // Waits until `t`; false if the run stopped first.
            let wait_until = |t: Instant| {
                let left = t.saturating_duration_since(Instant::now());
                matches!(
                    stopped.recv_timeout(left),
                    Err(mpsc::RecvTimeoutError::Timeout)
                )
            };
            if !wait_until(start + dark_at) {
                anyhow::bail!("the run stopped before the power cut");
            }
            let cut = Instant::now();
            lock(&switch).power_cut()?;
            // The power comes back when the dark phase ends, whatever else
            // happens: the product must not stay off.
            wait_until(cut + dark);
            let on = Instant::now();
            lock(&switch).power_on()?;
            let secs = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
            Ok(Outage {
                power_cut_s: secs(cut),
                power_on_s: secs(on),
            })
        });
        Switchboard { stop, thread }
    }

    /// Ends the schedule early (the run stopped) and returns what happened.
    pub fn finish(self) -> anyhow::Result<Outage> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the power switch thread panicked"))?
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seconds from the run's start to the start of the first dark phase.
pub fn dark_at(w: &Workload) -> Option<(Duration, Duration)> {
    let mut at = 0.0;
    for p in &w.phases {
        if p.dark {
            return Some((
                Duration::from_secs_f64(at),
                Duration::from_secs_f64(p.duration.as_secs_f64()),
            ));
        }
        at += p.duration.as_secs_f64();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorded {
        events: Vec<(&'static str, Instant)>,
    }

    impl PowerSwitch for Recorded {
        fn power_cut(&mut self) -> anyhow::Result<()> {
            self.events.push(("cut", Instant::now()));
            Ok(())
        }
        fn power_on(&mut self) -> anyhow::Result<()> {
            self.events.push(("on", Instant::now()));
            Ok(())
        }
    }

    #[test]
    fn the_downtime_workload_keeps_the_main_runs_servers() {
        let main = load(
            "polymix-3",
            &Overrides {
                rate: Some(PeakRate::from(Rate(100.0))),
                cache_size: Some(cacheoff_base::Bytes(32 << 20)),
                plateau: Some(Dur::secs(60.0)),
                ..Default::default()
            },
        )
        .unwrap();
        let w = workload(&main, &Downtime::default()).unwrap();
        assert_eq!(w.servers.count, DOWNTIME_SERVERS);
        assert_eq!(w.servers.first_ip, main.servers.first_ip);
        assert_eq!(w.peak_rate, Some(Rate(50.0)));
        let (at, dark) = dark_at(&w).unwrap();
        assert_eq!((at.as_secs_f64(), dark.as_secs_f64()), (10.0, 5.0));
        let total: f64 = w.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
        assert_eq!(total, 45.0);
    }

    #[test]
    fn the_power_is_cut_at_the_dark_point_and_restored_after_it() {
        let switch = Arc::new(Mutex::new(Recorded::default()));
        let start = Instant::now();
        let board = Switchboard::start(
            switch.clone(),
            start,
            Duration::from_millis(200),
            Duration::from_secs(1),
        );
        // Until the power is back (a busy machine may take a while).
        let deadline = Instant::now() + Duration::from_secs(60);
        while lock(&switch).events.len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let outage = board.finish().unwrap();
        // Never early; late by less than the dark phase, so neither step
        // can be taken for the other.
        assert!(
            outage.power_cut_s >= 0.2 && outage.power_cut_s < 1.2,
            "{outage:?}"
        );
        let off = outage.power_on_s - outage.power_cut_s;
        assert!((1.0..2.0).contains(&off), "{outage:?}");
        let ev = &lock(&switch).events;
        assert_eq!(ev.iter().map(|e| e.0).collect::<Vec<_>>(), ["cut", "on"]);
    }

    #[test]
    fn a_run_that_stops_early_never_cuts_the_power() {
        let switch = Arc::new(Mutex::new(Recorded::default()));
        let board = Switchboard::start(
            switch.clone(),
            Instant::now(),
            Duration::from_secs(60),
            Duration::from_secs(5),
        );
        assert!(board.finish().is_err());
        assert!(lock(&switch).events.is_empty());
    }
}
