//! The downtime test's figures: time till first miss (TTFM), first hit
//! (TTFH) and first accepted connection after power returns.

use crate::Run;
use cacheoff_rundir::{IntervalRecord, Outage};
use cacheoff_stats::Entry;
use serde::{Deserialize, Serialize};

/// A downtime run's results, in seconds after power returned (`None`:
/// none happened before the run ended).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Downtime {
    pub ttfm_s: Option<f64>,
    pub ttfh_s: Option<f64>,
    pub first_conn_s: Option<f64>,
    /// From the timed power-on (`downtime.json`) to the moment of each
    /// first, to the millisecond; otherwise from the end of the dark phase
    /// to the end of the first interval with one: an upper bound, to the
    /// interval.
    pub precise: bool,
}

/// The three firsts a downtime test looks for.
#[derive(Clone, Copy)]
enum What {
    Miss,
    Hit,
    Conn,
}

impl What {
    /// When a span saw its first one (seconds from the run's start).
    fn first(self, e: &Entry) -> Option<f64> {
        match self {
            What::Miss => e.firsts.miss_s,
            What::Hit => e.firsts.hit_s,
            What::Conn => e.firsts.conn_s,
        }
    }

    /// Whether a span saw any.
    fn seen(self, e: &Entry) -> bool {
        match self {
            What::Miss => e.rt_ms.miss.count > 0,
            What::Hit => e.rt_ms.hit.count > 0,
            What::Conn => e.conns.opened > 0,
        }
    }
}

impl Downtime {
    /// The figures of a downtime run's `intervals`, whose dark phases are
    /// named `dark`: precise with a timed `outage` (and intervals that
    /// record their firsts), else to the interval from the dark phases'
    /// end (or from the power-on of an outage whose run predates firsts).
    /// All `None` for a run without a dark phase or outage.
    pub fn of(intervals: &[IntervalRecord], dark: &[&str], outage: Option<&Outage>) -> Downtime {
        let has_firsts = intervals.iter().any(|r| !r.stats.firsts.is_empty());
        let from = match outage {
            Some(o) => Some(o.power_on_s),
            None => intervals
                .iter()
                .filter(|r| dark.contains(&r.phase.as_str()))
                .map(|r| r.end_s)
                .reduce(f64::max),
        };
        let Some(from) = from else {
            return Downtime::default();
        };
        let precise = outage.is_some() && has_firsts;
        let first = |w: What| {
            if precise {
                // An interval that straddles the power-on and saw one
                // before it hides any later one of its own; with the
                // power off there is none to hide.
                intervals
                    .iter()
                    .filter(|r| r.end_s > from)
                    .filter_map(|r| w.first(&r.stats))
                    .filter(|&t| t >= from)
                    .reduce(f64::min)
                    .map(|t| t - from)
            } else {
                intervals
                    .iter()
                    .filter(|r| r.start_s >= from - 1e-6)
                    .find(|r| w.seen(&r.stats))
                    .map(|r| r.end_s - from)
            }
        };
        Downtime {
            ttfm_s: first(What::Miss),
            ttfh_s: first(What::Hit),
            first_conn_s: first(What::Conn),
            precise,
        }
    }
}

/// TTFM, TTFH and time to first connection of a downtime run.
pub fn time_till_first(run: &Run) -> Downtime {
    let dark: Vec<&str> = run
        .manifest
        .workload
        .phases
        .iter()
        .filter(|p| p.dark)
        .map(|p| p.name.as_str())
        .collect();
    Downtime::of(&run.intervals, &dark, run.outage.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_stats::{Accum, Firsts};

    /// An interval of `phase` from `start_s` for 5 s with the given
    /// firsts (each also counted: a miss, a hit, a connection).
    fn iv(
        phase: &str,
        start_s: f64,
        miss: Option<f64>,
        hit: Option<f64>,
        conn: Option<f64>,
    ) -> IntervalRecord {
        let mut stats = Accum::default().entry(phase, &[]);
        stats.firsts = Firsts {
            hit_s: hit,
            miss_s: miss,
            conn_s: conn,
        };
        stats.rt_ms.miss.count = u64::from(miss.is_some());
        stats.rt_ms.hit.count = u64::from(hit.is_some());
        stats.conns.opened = u64::from(conn.is_some());
        IntervalRecord {
            version: 2,
            interval: (start_s / 5.0) as u32,
            phase: phase.into(),
            start_s,
            end_s: start_s + 5.0,
            robots: 3,
            load: 1.0,
            stats,
            resources: None,
        }
    }

    /// Load until 10 s, dark 10–15 s, then the measured phase: the power
    /// came back at 15.2 s; the product took connections at 17.05 s,
    /// served a miss at 18.3 s and a hit at 21.45 s.
    fn intervals() -> Vec<IntervalRecord> {
        vec![
            iv("load", 0.0, Some(0.4), Some(1.1), Some(0.01)),
            iv("load", 5.0, Some(5.2), Some(5.5), None),
            iv("dark", 10.0, Some(10.1), None, None),
            iv("meas", 15.0, Some(18.3), None, Some(17.05)),
            iv("meas", 20.0, Some(20.1), Some(21.45), Some(22.0)),
            iv("meas", 25.0, Some(25.1), Some(25.2), None),
        ]
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn a_timed_power_cut_gives_each_first_to_the_millisecond() {
        let o = Outage {
            power_cut_s: 10.0,
            power_on_s: 15.2,
        };
        let d = Downtime::of(&intervals(), &["dark"], Some(&o));
        assert!(d.precise);
        assert!(close(d.ttfm_s, 3.1), "{d:?}");
        assert!(close(d.ttfh_s, 6.25), "{d:?}");
        assert!(close(d.first_conn_s, 1.85), "{d:?}");

        // Power returned mid-interval, after a first that belongs to the
        // time before: that one is not counted.
        let o = Outage {
            power_cut_s: 10.0,
            power_on_s: 20.05,
        };
        let d = Downtime::of(&intervals(), &["dark"], Some(&o));
        assert!(close(d.ttfm_s, 0.05), "{d:?}");
        assert!(close(d.ttfh_s, 1.4), "{d:?}");
        assert!(close(d.first_conn_s, 1.95), "{d:?}");

        // Nothing after power-on: no figures, still precise.
        let o = Outage {
            power_cut_s: 10.0,
            power_on_s: 40.0,
        };
        let d = Downtime::of(&intervals(), &["dark"], Some(&o));
        assert_eq!((d.ttfm_s, d.ttfh_s, d.first_conn_s), (None, None, None));
    }

    #[test]
    fn without_downtime_json_figures_count_to_interval_ends_from_the_dark_phase() {
        let d = Downtime::of(&intervals(), &["dark"], None);
        assert!(!d.precise);
        assert!(close(d.ttfm_s, 5.0), "{d:?}");
        assert!(close(d.ttfh_s, 10.0), "{d:?}");
        assert!(close(d.first_conn_s, 5.0), "{d:?}");
        assert_eq!(Downtime::of(&intervals(), &[], None), Downtime::default());

        // A timed outage in a run that predates firsts: to the interval,
        // from the power-on.
        let mut old = intervals();
        for r in &mut old {
            r.stats.firsts = Firsts::default();
        }
        let o = Outage {
            power_cut_s: 10.0,
            power_on_s: 15.0,
        };
        let d = Downtime::of(&old, &["dark"], Some(&o));
        assert!(!d.precise);
        assert!(close(d.ttfm_s, 5.0) && close(d.ttfh_s, 10.0), "{d:?}");
    }
}
