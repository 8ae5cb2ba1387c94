//! The open-loop pacer: hands out each planned arrival at its intended
//! time, never early, whatever the robots' connections are doing. Latency
//! is measured from that intended time (wrk2's correction), so a pacer or
//! robot that falls behind shows in the figures instead of hiding.

use crate::timeline::Timeline;
use cacheoff_timer::PreciseTimer;
use cacheoff_workload::{ArrivalTimes, Factors};
use std::time::{Duration, Instant};

/// A time-ordered source of arrivals: the plan's ([`ArrivalTimes`],
/// whose items are robot indices) or a replayed trace's.
pub trait Arrivals {
    type Item;
    /// Waits until the next arrival is known or there is none (a trace is
    /// read ahead on another thread).
    async fn ready(&mut self) {}
    /// When the next candidate is due, in nanoseconds of run time.
    fn peek_ns(&self) -> Option<u64>;
    /// Takes the next candidate, if the schedule's factors accept it.
    fn pop(&mut self, factors: Option<Factors>) -> Option<Self::Item>;
}

impl Arrivals for ArrivalTimes {
    type Item = usize;
    fn peek_ns(&self) -> Option<u64> {
        ArrivalTimes::peek_ns(self)
    }
    fn pop(&mut self, factors: Option<Factors>) -> Option<usize> {
        ArrivalTimes::pop(self, factors)
    }
}

/// Calls `issue(item, intended)` for every accepted arrival, in time
/// order, at or after its intended time, until the schedule ends or
/// `stopping()`. Run time zero is `start`.
pub async fn pace<A: Arrivals>(
    arrivals: &mut A,
    start: Instant,
    timeline: &Timeline,
    stopping: &dyn Fn() -> bool,
    mut issue: impl FnMut(A::Item, Instant),
) {
    let total_s = timeline.schedule().total_s();
    let sched = |t_ns: u64| timeline.schedule_s(t_ns as f64 / 1e9);
    // Tokio's 1 ms timer is the fallback if a timerfd cannot be had.
    let mut timer = PreciseTimer::new().ok();
    loop {
        arrivals.ready().await;
        let Some(t) = arrivals.peek_ns() else {
            break;
        };
        if sched(t) >= total_s || stopping() {
            break;
        }
        let due = start + Duration::from_nanos(t);
        if due > Instant::now() {
            // The worker polls its pacer between its other tasks, so on a
            // busy thread this returns on time by the clock alone; the
            // timer wakes an idle one.
            match timer.as_mut() {
                Some(t) => {
                    if t.sleep_until(due).await.is_err() {
                        timer = None;
                    }
                }
                None => tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await,
            }
            if stopping() {
                break;
            }
        }
        let now_ns = Instant::now().saturating_duration_since(start).as_nanos() as u64;
        while let Some(t) = arrivals.peek_ns() {
            let s = sched(t);
            if t > now_ns || s >= total_s {
                break;
            }
            if let Some(item) = arrivals.pop(timeline.schedule().factors_at(s)) {
                issue(item, start + Duration::from_nanos(t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_base::Dur;
    use cacheoff_workload::{load, Overrides};

    #[test]
    fn every_arrival_is_issued_in_order_and_never_early() {
        let mut w = load("simple", &Overrides::default()).unwrap();
        w.phases[0].duration = Dur::secs(0.2);
        w.phases[1].duration = Dur::secs(0.3);
        w.robots.count = 20;
        let timeline = Timeline::new(&w);
        let robots: Vec<u32> = (0..20).collect();
        let expected = {
            let mut a = ArrivalTimes::new(&w, timeline.schedule(), &robots, 100.0);
            let mut n = 0;
            while let Some(t) = a.peek_ns() {
                let s = t as f64 / 1e9;
                if s >= timeline.schedule().total_s() {
                    break;
                }
                n += usize::from(a.pop(timeline.schedule().factors_at(s)).is_some());
            }
            n
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let start = Instant::now() + Duration::from_millis(20);
        let mut issued: Vec<(usize, Instant, Instant)> = Vec::new();
        let mut a = ArrivalTimes::new(&w, timeline.schedule(), &robots, 100.0);
        rt.block_on(pace(&mut a, start, &timeline, &|| false, |r, intended| {
            issued.push((r, intended, Instant::now()));
        }));
        assert_eq!(issued.len(), expected, "the whole plan, and no more");
        assert!(expected > 500, "2,000/s for 0.5 s: {expected}");
        for w in issued.windows(2) {
            assert!(w[0].1 <= w[1].1, "in time order");
        }
        for (_, intended, at) in &issued {
            assert!(at >= intended, "never early");
        }
    }

    #[test]
    fn stopping_ends_the_pacing() {
        let w = load("simple", &Overrides::default()).unwrap();
        let timeline = Timeline::new(&w);
        let mut a = ArrivalTimes::new(&w, timeline.schedule(), &[0, 1], 100.0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut n = 0;
        rt.block_on(pace(&mut a, Instant::now(), &timeline, &|| true, |_, _| {
            n += 1
        }));
        assert_eq!(n, 0);
    }
}
