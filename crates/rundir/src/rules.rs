//! The cache-off's rules, judged in one place: the report card shows
//! these verdicts, the executive summary and the lineup's summary list
//! their failures, and a run's exit status follows them. Each rule reads
//! the run's [`Facts`] and says pass, fail (disqualified, and why) or why
//! it does not apply.

use crate::{Mode, Run};
use cacheoff_stats::Entry;
use serde::{Deserialize, Serialize};

/// More errors than this (percent of transactions) disqualify.
pub const MAX_ERROR_PERCENT: f64 = 3.0;
/// A document hit ratio under this (percent) disqualifies a cache.
pub const MIN_DHR_PERCENT: f64 = 25.0;
/// The MSL test: TIME-WAIT of at least 60 s (an MSL of 30 s).
pub const MIN_TIME_WAIT_S: f64 = 60.0;

cacheoff_base::closed_set! {
    /// The cache-off's disqualification rules.
    Rule {
        Errors = "errors": "at most 3% of the measured phase's transactions may fail",
        HitRatio = "hit ratio": "a cache under test must reach a 25% document hit ratio where the workload offers that much and hits can be seen",
        Msl = "msl": "the product must keep a closed connection in TIME-WAIT for 60 s",
    }
}

/// One rule's outcome, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass(String),
    Fail(String),
    NotApplicable(String),
}

impl Verdict {
    pub fn failed(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

/// The MSL test: how long the product kept a closed connection in
/// TIME-WAIT, and whether that passes (at least 60 s, an MSL of 30 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MslResult {
    /// Seconds until the product accepted the same connection again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_s: Option<f64>,
    /// The test's verdict; when left out, `time_wait_s` ≥ 60 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<bool>,
}

impl MslResult {
    /// Passed, failed, or not known.
    pub fn verdict(&self) -> Option<bool> {
        self.pass.or(self.time_wait_s.map(|t| t >= MIN_TIME_WAIT_S))
    }
}

/// What the rules look at.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// How robots reached the servers.
    pub mode: Mode,
    /// Robots spoke HTTPS (through a forward proxy: inside `CONNECT`
    /// tunnels, where no hit can be seen).
    pub tls: bool,
    /// The phase the figures are from.
    pub phase: String,
    pub errors_percent: f64,
    /// Document hit ratio measured, and offered by the workload (percent).
    pub dhr: f64,
    pub dhr_offered: f64,
    /// What the best policy cacheoff knows reaches at the cache's size,
    /// when known (a replay's ceilings): the rule does not ask more.
    pub dhr_reachable: Option<f64>,
    /// The product's MSL test, when one was run (a lineup's).
    pub msl: Option<MslResult>,
}

impl Facts {
    /// A run's facts from its directory (its headline figures).
    pub fn of(run: &Run) -> Facts {
        let m = &run.manifest;
        Facts {
            dhr_reachable: run
                .summary
                .as_ref()
                .and_then(|s| s.ceiling.as_ref())
                .map(|c| c.lru.max(c.belady)),
            ..Facts::of_figures(&run.headline(), m.mode(), m.workload.robots.tls)
        }
    }

    /// The facts of figures `h` from a run in `mode`, over HTTPS or not.
    pub fn of_figures(h: &Entry, mode: Mode, tls: bool) -> Facts {
        Facts {
            mode,
            tls,
            phase: h.name.clone(),
            errors_percent: h.errors.percent,
            dhr: h.dhr.measured,
            dhr_offered: h.dhr.offered,
            dhr_reachable: None,
            msl: None,
        }
    }
}

/// `v` rounded to 3 decimals, without trailing zeros.
fn num(v: f64) -> String {
    ((v * 1000.0).round() / 1000.0).to_string()
}

/// Every rule's verdict on `f`, in [`Rule::ALL`] order.
pub fn judge(f: &Facts) -> Vec<(Rule, Verdict)> {
    let errors = if f.errors_percent <= MAX_ERROR_PERCENT {
        Verdict::Pass(format!(
            "{}% errors (at most {MAX_ERROR_PERCENT}% allowed)",
            num(f.errors_percent)
        ))
    } else {
        Verdict::Fail(format!(
            "{}% errors, more than {MAX_ERROR_PERCENT}%",
            num(f.errors_percent)
        ))
    };
    let hit_ratio = if f.mode == Mode::Direct {
        Verdict::NotApplicable("no proxy under test".into())
    } else if f.mode == Mode::Forward && f.tls {
        Verdict::NotApplicable(
            "HTTPS through a forward proxy: no hit can be seen inside its tunnels".into(),
        )
    } else if f.dhr_offered < MIN_DHR_PERCENT {
        Verdict::NotApplicable(format!(
            "the workload offered {}% over {}: no cache could reach {MIN_DHR_PERCENT}%",
            num(f.dhr_offered),
            f.phase
        ))
    } else if let Some(r) = f.dhr_reachable.filter(|&r| r < MIN_DHR_PERCENT) {
        Verdict::NotApplicable(format!(
            "the best policy known reaches {}% at this cache size, under {MIN_DHR_PERCENT}%",
            num(r)
        ))
    } else if f.dhr >= MIN_DHR_PERCENT {
        Verdict::Pass(format!(
            "DHR {}% over {} (at least {MIN_DHR_PERCENT}% needed)",
            num(f.dhr),
            f.phase
        ))
    } else {
        Verdict::Fail(format!(
            "DHR {}% over {}, under {MIN_DHR_PERCENT}%",
            num(f.dhr),
            f.phase
        ))
    };
    let msl = match f.msl {
        None => Verdict::NotApplicable("not tested".into()),
        Some(m) => match (m.verdict(), m.time_wait_s) {
            (None, _) => Verdict::NotApplicable("no result recorded".into()),
            (Some(true), Some(t)) => Verdict::Pass(format!("TIME-WAIT {} s", num(t))),
            (Some(true), None) => Verdict::Pass("passed".into()),
            (Some(false), Some(t)) if t < MIN_TIME_WAIT_S => {
                Verdict::Fail(format!("TIME-WAIT {} s, under {MIN_TIME_WAIT_S} s", num(t)))
            }
            (Some(false), Some(t)) => {
                Verdict::Fail(format!("failed the MSL test (TIME-WAIT {} s)", num(t)))
            }
            (Some(false), None) => Verdict::Fail("failed the MSL test".into()),
        },
    };
    vec![
        (Rule::Errors, errors),
        (Rule::HitRatio, hit_ratio),
        (Rule::Msl, msl),
    ]
}

/// Why `f` is disqualified: each failed rule's reason (empty: it is not).
pub fn disqualified(f: &Facts) -> Vec<String> {
    judge(f)
        .into_iter()
        .filter_map(|(_, v)| match v {
            Verdict::Fail(why) => Some(why),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            mode: Mode::Forward,
            tls: false,
            phase: "top2".into(),
            errors_percent: 0.5,
            dhr: 40.0,
            dhr_offered: 55.0,
            dhr_reachable: None,
            msl: None,
        }
    }

    #[test]
    fn rules_draw_the_line_at_the_cache_off_limits() {
        assert!(disqualified(&facts()).is_empty());
        let f = Facts {
            errors_percent: 3.5,
            ..facts()
        };
        assert_eq!(disqualified(&f), ["3.5% errors, more than 3%"]);
        let f = Facts {
            errors_percent: 3.0,
            dhr: 25.0,
            ..facts()
        };
        assert!(disqualified(&f).is_empty(), "the limits themselves pass");
        let f = Facts {
            dhr: 20.0,
            ..facts()
        };
        assert_eq!(disqualified(&f), ["DHR 20% over top2, under 25%"]);
    }

    #[test]
    fn the_hit_ratio_rule_applies_wherever_a_cache_could_meet_it() {
        let low = Facts {
            dhr: 10.0,
            phase: "run".into(),
            ..facts()
        };
        // Any workload, not only PolyMix's top2; a surrogate as well.
        assert!(!disqualified(&low).is_empty());
        let reverse = Facts {
            mode: Mode::Reverse,
            tls: true,
            ..low.clone()
        };
        assert!(!disqualified(&reverse).is_empty(), "HTTPS to a surrogate");
        for exempt in [
            Facts {
                mode: Mode::Direct,
                ..low.clone()
            },
            Facts {
                tls: true,
                ..low.clone()
            },
            Facts {
                dhr_offered: 20.0,
                ..low.clone()
            },
            Facts {
                dhr_reachable: Some(24.0),
                ..low.clone()
            },
        ] {
            let v = &judge(&exempt)[1].1;
            assert!(matches!(v, Verdict::NotApplicable(_)), "{exempt:?}: {v:?}");
        }
    }

    #[test]
    fn a_failed_msl_test_disqualifies() {
        let f = |time_wait_s, pass| Facts {
            msl: Some(MslResult { time_wait_s, pass }),
            ..facts()
        };
        assert_eq!(
            disqualified(&f(Some(30.0), None)),
            ["TIME-WAIT 30 s, under 60 s"]
        );
        assert!(disqualified(&f(Some(60.0), None)).is_empty());
        assert_eq!(disqualified(&f(None, Some(false))), ["failed the MSL test"]);
        assert!(matches!(
            judge(&f(None, None))[2].1,
            Verdict::NotApplicable(_)
        ));
    }
}
