//! The search: a bracket grown (or shrunk) by a factor until one step
//! passes and one fails, bisected to the precision, and its top confirmed
//! by a repeat step.

use crate::limit::{Figures, Limits};

/// How the search proceeds. Loads are request rates (per second) for
/// open-loop steps, or robot counts (`whole`) for closed-loop ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    /// The first load tried.
    pub start: f64,
    /// Stop bisecting once the bracket is this narrow, relative to its
    /// passing end (0.05: within 5%).
    pub precision: f64,
    /// Factor the load grows (or shrinks) by until the bracket closes.
    pub growth: f64,
    /// Loads tried stay within `min..=max`.
    pub min: f64,
    pub max: f64,
    /// Most steps before the confirmation (growth and bisection).
    pub max_steps: usize,
    /// Times a failed confirmation steps down and tries again.
    pub retries: usize,
    /// Loads are whole numbers (robots).
    pub whole: bool,
    /// Run a failed probe again before believing it.
    pub recheck: bool,
}

impl SearchConfig {
    /// Defaults: 5% precision, doubling, at most 16 steps and 3 step-downs.
    pub fn new(start: f64) -> SearchConfig {
        SearchConfig {
            start,
            precision: 0.05,
            growth: 2.0,
            min: 1.0,
            max: 1e6,
            max_steps: 16,
            retries: 3,
            whole: false,
            recheck: true,
        }
    }

    fn fit(&self, load: f64) -> f64 {
        let l = load.clamp(self.min, self.max);
        if self.whole {
            l.round().max(1.0)
        } else {
            // Rates to 0.1/s: readable step names, and no endless halving.
            (l * 10.0).round() / 10.0
        }
    }
}

/// Why a step was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Growing, shrinking or bisecting the bracket.
    Probe,
    /// Repeating the best passing load.
    Confirm,
    /// Repeating a probe that failed: the load fails only if this fails
    /// too, so a one-off spike (a machine busy with something else)
    /// does not close the bracket.
    Recheck,
}

/// One step: a load, what it measured and the decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub load: f64,
    pub role: Role,
    pub figures: Figures,
    pub pass: bool,
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A peak was bracketed and confirmed.
    Found,
    /// Every load up to `max` passed; the peak is `max` (confirmed), a
    /// lower bound.
    AtMax,
    /// Not even `min` passed.
    NonePassed,
    /// Every confirmation (and step-down) failed.
    Unconfirmed,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Found => "found",
            Stop::AtMax => "at_max",
            Stop::NonePassed => "none_passed",
            Stop::Unconfirmed => "unconfirmed",
        }
    }
}

/// The result: the peak load (confirmed), its confirming step's figures,
/// every step in order, and the bracket bisection ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub peak: Option<f64>,
    pub peak_figures: Option<Figures>,
    pub steps: Vec<Step>,
    pub stop: Stop,
    /// The highest passing and lowest failing load before confirmation.
    pub bracket: (Option<f64>, Option<f64>),
}

struct Searcher<'a, P> {
    limits: &'a Limits,
    probe: P,
    steps: Vec<Step>,
}

impl<P, E> Searcher<'_, P>
where
    P: FnMut(f64, Role) -> Result<Figures, E>,
{
    fn probes(&self) -> usize {
        self.steps
            .iter()
            .filter(|st| st.role == Role::Probe)
            .count()
    }

    /// A probe: a failure is rechecked once when `recheck`.
    fn probe(&mut self, load: f64, recheck: bool) -> Result<bool, E> {
        Ok(self.step(load, Role::Probe)? || (recheck && self.step(load, Role::Recheck)?))
    }

    fn step(&mut self, load: f64, role: Role) -> Result<bool, E> {
        let figures = (self.probe)(load, role)?;
        let pass = self.limits.judge(&figures);
        self.steps.push(Step {
            load,
            role,
            figures,
            pass,
        });
        Ok(pass)
    }
}

/// Finds the highest load that keeps `limits`, calling `probe` for each
/// step (in order; an error ends the search). At most `max_steps`
/// probes (each failed one rechecked once) and `retries + 1`
/// confirmations are run.
pub fn find<E>(
    cfg: &SearchConfig,
    limits: &Limits,
    probe: impl FnMut(f64, Role) -> Result<Figures, E>,
) -> Result<Outcome, E> {
    let mut s = Searcher {
        limits,
        probe,
        steps: Vec::new(),
    };
    let (mut lo, mut hi) = (None::<f64>, None::<f64>);
    let mut load = cfg.fit(cfg.start);
    // Grow or shrink until one load passed and one failed.
    while s.probes() < cfg.max_steps {
        if s.probe(load, cfg.recheck)? {
            lo = Some(load);
            if hi.is_some() || load >= cfg.max {
                break;
            }
            load = cfg.fit(load * cfg.growth);
        } else {
            hi = Some(load);
            if lo.is_some() || load <= cfg.min {
                break;
            }
            load = cfg.fit(load / cfg.growth);
        }
    }
    let Some(mut lo) = lo else {
        return Ok(Outcome {
            peak: None,
            peak_figures: None,
            steps: s.steps,
            stop: Stop::NonePassed,
            bracket: (None, hi),
        });
    };
    // Bisect.
    if let Some(mut h) = hi {
        while s.probes() < cfg.max_steps && h - lo > cfg.precision * lo {
            let mid = cfg.fit((lo + h) / 2.0);
            if mid <= lo || mid >= h {
                break;
            }
            if s.probe(mid, cfg.recheck)? {
                lo = mid;
            } else {
                h = mid;
            }
        }
        hi = Some(h);
    }
    let bracket = (Some(lo), hi);
    // Confirm, stepping down when the repeat fails.
    let mut candidate = lo;
    for _ in 0..=cfg.retries {
        if s.step(candidate, Role::Confirm)? {
            let figures = s.steps.last().map(|st| st.figures);
            let stop = if hi.is_none() && candidate >= cfg.max {
                Stop::AtMax
            } else {
                Stop::Found
            };
            return Ok(Outcome {
                peak: Some(candidate),
                peak_figures: figures,
                steps: s.steps,
                stop,
                bracket,
            });
        }
        let mut next = cfg.fit(candidate * (1.0 - cfg.precision));
        if cfg.whole && next >= candidate {
            next = candidate - 1.0;
        }
        if next < cfg.min || next >= candidate {
            break;
        }
        candidate = next;
    }
    Ok(Outcome {
        peak: None,
        peak_figures: None,
        steps: s.steps,
        stop: Stop::Unconfirmed,
        bracket,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn limits() -> Limits {
        Limits::parse("p99<=50ms", Some("0.1%")).unwrap()
    }

    /// A proxy that serves `capacity` requests a second from one queue:
    /// p99 grows as the load nears it and without bound above it.
    fn capped(capacity: f64) -> impl FnMut(f64, Role) -> Result<Figures, Infallible> {
        move |load, _| {
            let rho = load / capacity;
            let p99 = if rho < 1.0 {
                5.0 + 4.0 * rho / (1.0 - rho)
            } else {
                1000.0 * rho
            };
            Ok(Figures {
                rate_xps: load.min(capacity),
                xacts: 1000,
                rt_ms_mean: p99 / 3.0,
                rt_ms_p99: p99,
                error_pct: 0.0,
            })
        }
    }

    /// The model's highest passing load: p99 = 50 at rho = 45/49.
    fn knee(capacity: f64) -> f64 {
        capacity * 45.0 / 49.0
    }

    #[test]
    fn the_peak_is_within_the_precision_below_the_knee() {
        for start in [10.0, 400.0, 5000.0] {
            let out = find(&SearchConfig::new(start), &limits(), capped(300.0)).unwrap();
            let peak = out.peak.unwrap();
            assert_eq!(out.stop, Stop::Found, "{out:?}");
            assert!(peak <= knee(300.0) && peak >= knee(300.0) * 0.95, "{peak}");
            let (lo, hi) = out.bracket;
            assert!(hi.unwrap() - lo.unwrap() <= 0.05 * lo.unwrap());
            // It holds again, and 1.3 times it does not.
            let mut model = capped(300.0);
            assert!(limits().judge(&model(peak, Role::Probe).unwrap()));
            assert!(!limits().judge(&model(peak * 1.3, Role::Probe).unwrap()));
            let last = out.steps.last().unwrap();
            assert_eq!(
                (last.role, last.pass, last.load),
                (Role::Confirm, true, peak)
            );
            let probes = out.steps.iter().filter(|s| s.role == Role::Probe).count();
            assert!(probes <= 16, "{probes}");
        }
    }

    #[test]
    fn the_bracket_grows_from_below_and_shrinks_from_above() {
        let out = find(&SearchConfig::new(50.0), &limits(), capped(300.0)).unwrap();
        let loads: Vec<f64> = out.steps.iter().map(|s| s.load).collect();
        assert_eq!(&loads[..4], [50.0, 100.0, 200.0, 400.0]);
        let out = find(&SearchConfig::new(1000.0), &limits(), capped(300.0)).unwrap();
        let loads: Vec<(f64, Role)> = out.steps.iter().map(|s| (s.load, s.role)).collect();
        use Role::{Probe, Recheck};
        assert_eq!(
            &loads[..5],
            [
                (1000.0, Probe),
                (1000.0, Recheck),
                (500.0, Probe),
                (500.0, Recheck),
                (250.0, Probe)
            ]
        );
    }

    #[test]
    fn a_one_off_failure_is_rechecked_and_does_not_close_the_bracket() {
        let mut model = capped(300.0);
        let mut spiked = false;
        let out = find(&SearchConfig::new(100.0), &limits(), |load, role| {
            let mut f = model(load, role)?;
            if load == 200.0 && !spiked {
                spiked = true;
                f.rt_ms_p99 = 900.0;
            }
            Ok::<_, Infallible>(f)
        })
        .unwrap();
        let at_200: Vec<(Role, bool)> = out
            .steps
            .iter()
            .filter(|s| s.load == 200.0)
            .map(|s| (s.role, s.pass))
            .collect();
        assert_eq!(at_200, [(Role::Probe, false), (Role::Recheck, true)]);
        let peak = out.peak.unwrap();
        assert!(peak >= knee(300.0) * 0.95, "{peak}");
        // Without rechecks, the spike would have closed the bracket at 200.
        let mut model = capped(300.0);
        let mut spiked = false;
        let cfg = SearchConfig {
            recheck: false,
            ..SearchConfig::new(100.0)
        };
        let out = find(&cfg, &limits(), |load, role| {
            let mut f = model(load, role)?;
            if load == 200.0 && !spiked {
                spiked = true;
                f.rt_ms_p99 = 900.0;
            }
            Ok::<_, Infallible>(f)
        })
        .unwrap();
        assert!(out.peak.unwrap() < 200.0);
    }

    #[test]
    fn a_failed_confirmation_steps_down() {
        let mut confirmations = 0;
        let mut model = capped(300.0);
        let out = find(&SearchConfig::new(100.0), &limits(), |load, role| {
            let mut f = model(load, role)?;
            if role == Role::Confirm {
                confirmations += 1;
                if confirmations == 1 {
                    f.error_pct = 5.0;
                }
            }
            Ok::<_, Infallible>(f)
        })
        .unwrap();
        let confirms: Vec<&Step> = out
            .steps
            .iter()
            .filter(|s| s.role == Role::Confirm)
            .collect();
        assert_eq!(confirms.len(), 2);
        assert!(!confirms[0].pass && confirms[1].pass);
        assert!((confirms[1].load - confirms[0].load * 0.95).abs() < 0.1);
        assert_eq!(out.peak, Some(confirms[1].load));
    }

    #[test]
    fn confirmations_are_bounded() {
        let mut probes = 0;
        let mut model = capped(300.0);
        let out = find(&SearchConfig::new(100.0), &limits(), |load, role| {
            probes += 1;
            let mut f = model(load, role)?;
            if role == Role::Confirm {
                f.xacts = 0;
            }
            Ok::<_, Infallible>(f)
        })
        .unwrap();
        assert_eq!(out.stop, Stop::Unconfirmed);
        assert_eq!(out.peak, None);
        let confirms = out.steps.iter().filter(|s| s.role == Role::Confirm).count();
        assert_eq!(confirms, 4);
        assert_eq!(probes, out.steps.len());
    }

    #[test]
    fn nothing_passes_or_everything_does() {
        let cfg = SearchConfig {
            min: 10.0,
            ..SearchConfig::new(100.0)
        };
        let out = find(&cfg, &limits(), capped(5.0)).unwrap();
        assert_eq!((out.stop, out.peak), (Stop::NonePassed, None));
        assert_eq!(out.steps.last().unwrap().load, 10.0);
        let cfg = SearchConfig {
            max: 1000.0,
            ..SearchConfig::new(100.0)
        };
        let out = find(&cfg, &limits(), capped(1e9)).unwrap();
        assert_eq!((out.stop, out.peak), (Stop::AtMax, Some(1000.0)));
    }

    #[test]
    fn the_step_budget_bounds_a_noisy_search() {
        let cfg = SearchConfig {
            max_steps: 5,
            precision: 0.0001,
            ..SearchConfig::new(100.0)
        };
        let out = find(&cfg, &limits(), capped(300.0)).unwrap();
        assert_eq!(
            out.steps.iter().filter(|s| s.role == Role::Probe).count(),
            5
        );
        assert!(out.peak.is_some());
    }

    #[test]
    fn whole_loads_for_robots_end() {
        // Closed loop: robots; each robot adds 40/s until 300/s.
        let cfg = SearchConfig {
            whole: true,
            ..SearchConfig::new(1.0)
        };
        let mut model = capped(300.0);
        let out = find(&cfg, &limits(), |robots, role| model(robots * 40.0, role)).unwrap();
        let peak = out.peak.unwrap();
        assert_eq!(peak.fract(), 0.0);
        assert_eq!(peak, (knee(300.0) / 40.0).floor());
        assert!(out.steps.iter().all(|s| s.load.fract() == 0.0));
    }

    #[test]
    fn errors_end_the_search() {
        let out = find(&SearchConfig::new(100.0), &limits(), |_, _| Err("down"));
        assert_eq!(out.unwrap_err(), "down");
    }
}
