//! Phases on a time line: the load factor at any moment, and the stats
//! intervals (5 s by default, cut at phase boundaries so that every interval
//! belongs to exactly one phase).

use cacheoff_base::Dur;
use serde::{Deserialize, Serialize};

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub name: String,
    pub duration: Dur,
    /// Load factor (share of the peak request rate) at the phase start.
    #[serde(default = "full_load")]
    pub load_begin: f64,
    /// Load factor at the phase end; it changes linearly in between.
    #[serde(default = "full_load")]
    pub load_end: f64,
    /// Whether the headline figures are taken over this phase.
    #[serde(default)]
    pub measured: bool,
    /// Factor on the workload's recurrence at the phase start and end
    /// (e.g. 5%/55% for a warm-up that offers a 5% hit ratio).
    #[serde(default = "one")]
    pub recurrence_begin: f64,
    #[serde(default = "one")]
    pub recurrence_end: f64,
    /// Factor on the shares of special (IMS and reload) requests.
    #[serde(default = "one")]
    pub special_begin: f64,
    #[serde(default = "one")]
    pub special_end: f64,
    /// Share of the robots that are alive.
    #[serde(default = "one")]
    pub population_begin: f64,
    #[serde(default = "one")]
    pub population_end: f64,
    /// The devices under test are powered off during this phase (the
    /// downtime test's dark phase); the run keeps sending.
    #[serde(default)]
    pub dark: bool,
}

/// The phase factors at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factors {
    pub load: f64,
    pub recurrence: f64,
    pub special: f64,
    pub population: f64,
}

impl Phase {
    /// A phase with every factor 1 and the given load ramp.
    pub fn new(name: &str, duration: Dur, load_begin: f64, load_end: f64) -> Phase {
        Phase {
            name: name.into(),
            duration,
            load_begin,
            load_end,
            measured: false,
            recurrence_begin: 1.0,
            recurrence_end: 1.0,
            special_begin: 1.0,
            special_end: 1.0,
            population_begin: 1.0,
            population_end: 1.0,
            dark: false,
        }
    }

    fn factors(&self, x: f64) -> Factors {
        let lerp = |a: f64, b: f64| a + (b - a) * x;
        Factors {
            load: lerp(self.load_begin, self.load_end),
            recurrence: lerp(self.recurrence_begin, self.recurrence_end),
            special: lerp(self.special_begin, self.special_end),
            population: lerp(self.population_begin, self.population_end),
        }
    }
}

fn full_load() -> f64 {
    1.0
}

fn one() -> f64 {
    1.0
}

/// A stats interval: `[start_s, end_s)` seconds from the run start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub index: u32,
    pub phase: usize,
    pub start_s: f64,
    pub end_s: f64,
}

/// The run's time line.
#[derive(Debug, Clone)]
pub struct Schedule {
    phases: Vec<Phase>,
    starts: Vec<f64>,
    total_s: f64,
}

impl Schedule {
    pub fn new(phases: &[Phase]) -> Schedule {
        let mut starts = Vec::with_capacity(phases.len());
        let mut t = 0.0;
        for p in phases {
            starts.push(t);
            t += p.duration.as_secs_f64();
        }
        Schedule {
            phases: phases.to_vec(),
            starts,
            total_s: t,
        }
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    pub fn total_s(&self) -> f64 {
        self.total_s
    }

    /// The phase running at `t` seconds, or None after the end.
    pub fn phase_at(&self, t: f64) -> Option<usize> {
        if t < 0.0 || t >= self.total_s {
            return None;
        }
        Some(self.starts.partition_point(|&s| s <= t) - 1)
    }

    /// The load factor at `t` seconds (0 outside the run).
    pub fn load_at(&self, t: f64) -> f64 {
        self.factors_at(t).map_or(0.0, |f| f.load)
    }

    /// Every phase factor at `t` seconds (None outside the run).
    pub fn factors_at(&self, t: f64) -> Option<Factors> {
        let i = self.phase_at(t)?;
        let p = &self.phases[i];
        let d = p.duration.as_secs_f64();
        let x = if d > 0.0 {
            (t - self.starts[i]) / d
        } else {
            0.0
        };
        Some(p.factors(x))
    }

    /// The largest load factor of the run.
    pub fn max_load(&self) -> f64 {
        self.phases
            .iter()
            .map(|p| p.load_begin.max(p.load_end))
            .fold(0.0, f64::max)
    }

    /// Stats intervals of `step` seconds, cut at phase boundaries.
    pub fn intervals(&self, step: f64) -> Vec<Interval> {
        let mut out = Vec::new();
        for (i, p) in self.phases.iter().enumerate() {
            let start = self.starts[i];
            let end = start + p.duration.as_secs_f64();
            let mut t = start;
            while t < end - 1e-9 {
                let e = (t + step).min(end);
                out.push(Interval {
                    index: out.len() as u32,
                    phase: i,
                    start_s: t,
                    end_s: e,
                });
                t = e;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, secs: f64, a: f64, b: f64) -> Phase {
        Phase::new(name, Dur::secs(secs), a, b)
    }

    #[test]
    fn load_ramps_linearly_and_intervals_cut_at_phases() {
        let s = Schedule::new(&[phase("ramp", 12.0, 0.0, 1.0), phase("top", 10.0, 1.0, 1.0)]);
        assert_eq!(s.total_s(), 22.0);
        assert!((s.load_at(6.0) - 0.5).abs() < 1e-9);
        assert_eq!(s.load_at(15.0), 1.0);
        assert_eq!(s.load_at(22.0), 0.0);
        assert_eq!(s.max_load(), 1.0);
        let mut p = phase("warm", 10.0, 0.1, 0.1);
        p.recurrence_begin = 0.05 / 0.55;
        p.recurrence_end = 1.0;
        p.population_begin = 0.0;
        let f = Schedule::new(&[p]).factors_at(5.0).unwrap();
        assert!((f.load - 0.1).abs() < 1e-12);
        assert!((f.recurrence - (0.05 / 0.55 + 1.0) / 2.0).abs() < 1e-12);
        assert!((f.population - 0.5).abs() < 1e-12);
        assert_eq!(f.special, 1.0);
        assert_eq!(s.phase_at(11.9), Some(0));
        assert_eq!(s.phase_at(12.0), Some(1));
        let iv = s.intervals(5.0);
        let spans: Vec<(usize, f64, f64)> =
            iv.iter().map(|i| (i.phase, i.start_s, i.end_s)).collect();
        assert_eq!(
            spans,
            vec![
                (0, 0.0, 5.0),
                (0, 5.0, 10.0),
                (0, 10.0, 12.0),
                (1, 12.0, 17.0),
                (1, 17.0, 22.0)
            ]
        );
    }
}
