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
    #[serde(default)]
    pub load_begin: Load,
    /// Load factor at the phase end; it changes linearly in between.
    #[serde(default)]
    pub load_end: Load,
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
    #[serde(default)]
    pub population_begin: Load,
    #[serde(default)]
    pub population_end: Load,
    /// The devices under test are powered off during this phase (the
    /// downtime test's dark phase); the run keeps sending.
    #[serde(default)]
    pub dark: bool,
    /// End the phase early once this goal is met (its duration is then a
    /// limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<FillGoal>,
}

/// A phase goal: fill the cache.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FillGoal {
    /// Cachable-miss bytes to fetch, in multiples of the cache size.
    pub fill: f64,
    /// Also wait until the working set stops growing (reaches its cap).
    #[serde(default)]
    pub freeze: bool,
}

/// A load or population factor: a number, or the fill rate's share of the
/// peak (`"fill"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    Factor(f64),
    /// The workload's fill rate ÷ peak rate.
    FillRate,
}

impl Default for Load {
    fn default() -> Self {
        Load::Factor(1.0)
    }
}

impl Load {
    /// The factor, given the fill rate's share of the peak.
    pub fn factor(self, fill: f64) -> f64 {
        match self {
            Load::Factor(f) => f,
            Load::FillRate => fill,
        }
    }
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::Factor(v) => write!(f, "{v}"),
            Load::FillRate => f.write_str("fill"),
        }
    }
}

impl Serialize for Load {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Load::Factor(v) => s.serialize_f64(*v),
            Load::FillRate => s.serialize_str("fill"),
        }
    }
}

impl<'de> Deserialize<'de> for Load {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Load;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a load factor (a number) or \"fill\" (the fill rate)")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Load, E> {
                Ok(Load::Factor(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Load, E> {
                Ok(Load::Factor(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Load, E> {
                Ok(Load::Factor(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Load, E> {
                if v == "fill" {
                    Ok(Load::FillRate)
                } else {
                    Err(E::custom(format!(
                        "{v:?} is not a load factor (a number or \"fill\")"
                    )))
                }
            }
        }
        d.deserialize_any(V)
    }
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
            load_begin: Load::Factor(load_begin),
            load_end: Load::Factor(load_end),
            measured: false,
            recurrence_begin: 1.0,
            recurrence_end: 1.0,
            special_begin: 1.0,
            special_end: 1.0,
            population_begin: Load::Factor(1.0),
            population_end: Load::Factor(1.0),
            dark: false,
            goal: None,
        }
    }

    fn factors(&self, x: f64, fill: f64) -> Factors {
        let lerp = |a: f64, b: f64| a + (b - a) * x;
        Factors {
            load: lerp(self.load_begin.factor(fill), self.load_end.factor(fill)),
            recurrence: lerp(self.recurrence_begin, self.recurrence_end),
            special: lerp(self.special_begin, self.special_end),
            population: lerp(
                self.population_begin.factor(fill),
                self.population_end.factor(fill),
            ),
        }
    }
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
    /// The fill rate's share of the peak, for `Load::FillRate`.
    fill: f64,
}

impl Schedule {
    /// `fill` is the fill rate's share of the peak rate.
    pub fn new(phases: &[Phase], fill: f64) -> Schedule {
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
            fill,
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
        Some(p.factors(x, self.fill))
    }

    /// The largest load factor of the run.
    pub fn max_load(&self) -> f64 {
        self.phases
            .iter()
            .map(|p| {
                p.load_begin
                    .factor(self.fill)
                    .max(p.load_end.factor(self.fill))
            })
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
        let s = Schedule::new(
            &[phase("ramp", 12.0, 0.0, 1.0), phase("top", 10.0, 1.0, 1.0)],
            1.0,
        );
        assert_eq!(s.total_s(), 22.0);
        assert!((s.load_at(6.0) - 0.5).abs() < 1e-9);
        assert_eq!(s.load_at(15.0), 1.0);
        assert_eq!(s.load_at(22.0), 0.0);
        assert_eq!(s.max_load(), 1.0);
        let mut p = phase("warm", 10.0, 0.1, 0.1);
        p.recurrence_begin = 0.05 / 0.55;
        p.recurrence_end = 1.0;
        p.population_begin = Load::Factor(0.0);
        let f = Schedule::new(&[p], 1.0).factors_at(5.0).unwrap();
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
