//! Scheduled phases in cacheoff's form. Polygraph's factors carry over:
//! an unset `_beg` is the previous phase's `_end` (the first phase starts
//! at 100%), an unset `_end` is the phase's `_beg`; cacheoff's phases
//! state both, so each is written out.

use crate::eval::Program;
use crate::lower::{err, fmt_secs, plain, Lowering, Taker};
use crate::source::Diagnostic;
use crate::value::{Param, Value, Q};
use toml::{Table, Value as T};

/// Polygraph's factor names and cacheoff's.
const FACTORS: &[(&str, &str)] = &[
    ("load_factor", "load"),
    ("populus_factor", "population"),
    ("recur_factor", "recurrence"),
    ("special_msg_factor", "special"),
];

/// A factor: a number, or the fill rate's share of the peak.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Factor {
    Number(f64),
    Fill,
}

impl Factor {
    fn toml(self) -> T {
        match self {
            Factor::Number(x) => T::Float(crate::lower::round_share(x)),
            Factor::Fill => T::String("fill".into()),
        }
    }
}

fn factor(v: &Value, span: crate::ast::Span, what: &str) -> Result<Factor, Diagnostic> {
    match v {
        Value::Float(Q { k, param: None }) | Value::Int(Q { k, param: None }) => {
            Ok(Factor::Number(*k))
        }
        Value::Float(Q {
            k,
            param: Some(Param::FillShare),
        }) if (*k - 1.0).abs() < 1e-9 => Ok(Factor::Fill),
        v => err(span, format!("{what} cannot be {v:?}")),
    }
}

impl Lowering {
    /// A factor; one robot's share (`1.0 / count(R.addresses)`) is 0, said
    /// so: cacheoff's population ramps start from no robot.
    fn factor(
        &mut self,
        v: &Value,
        span: crate::ast::Span,
        what: &str,
    ) -> Result<Factor, Diagnostic> {
        if let Value::Float(Q {
            param: Some(Param::InvPeak),
            ..
        }) = v
        {
            self.notes.push(Diagnostic::at(
                span,
                format!("{what}: one robot's share is taken as 0 (cacheoff's ramps start from no robot)"),
            ));
            return Ok(Factor::Number(0.0));
        }
        factor(v, span, what)
    }

    pub(crate) fn phases(&mut self, p: &Program) -> Result<(), Diagnostic> {
        let mut prev = [Factor::Number(1.0); 4];
        let mut out: Vec<(Table, f64, bool)> = Vec::new();
        for (rec, used_at) in &p.phases {
            let mut f = Taker::new(rec, "Phase");
            let name = match f.value("name") {
                Some((Value::Str(n), _)) => n,
                _ => format!("phase{}", out.len() + 1),
            };
            let mut t = Table::new();
            t.insert("name".into(), T::String(name.clone()));
            let goal = f.take("goal");
            let (mut duration, mut fill, mut xactions) = (None, None, None);
            if let Some(g) = &goal {
                let Value::Record(g) = &g.value else {
                    return err(g.span, "goal is a Goal");
                };
                let mut gf = Taker::new(g, "Goal");
                if let Some((Value::Time(q), s)) = gf.value("duration") {
                    duration = Some(plain(q, s, "goal.duration")?);
                }
                if let Some((v, s)) = gf.value("fill_size") {
                    fill = Some(match v {
                        Value::Size(Q {
                            k,
                            param: Some(Param::CacheSize),
                        }) => k,
                        v => {
                            return err(
                                s,
                                format!(
                                "goal.fill_size must be a multiple of the cache size, not {v:?}"
                            ),
                            )
                        }
                    });
                }
                if let Some((v, s)) = gf.value("xactions") {
                    xactions = Some((v, s));
                }
                gf.rest(&mut self.unmodelled);
            }
            let log_stats = !matches!(f.value("log_stats"), Some((Value::Bool(false), _)));
            // Polygraph's wait phase holds the start until the first
            // transaction; cacheoff starts at once.
            if let Some((Value::Int(q), s)) = &xactions {
                if duration.is_none() && fill.is_none() && q.number() == Some(1.0) && !log_stats {
                    self.notes.push(Diagnostic::at(
                        *s,
                        format!("phase {name:?} waits for one transaction: cacheoff starts at once, so it is left out"),
                    ));
                    continue;
                }
                self.unmodelled.push(Diagnostic::at(
                    *s,
                    "goal.xactions is not modelled (phases last a time)",
                ));
            }
            let freeze = matches!(f.value("wait_wss_freeze"), Some((Value::Bool(true), _)));
            match (duration, fill) {
                (_, Some(k)) => {
                    // A fill phase ends at its goal; its duration is a limit.
                    t.insert(
                        "duration".into(),
                        T::String(fmt_secs(duration.unwrap_or(86400.0))),
                    );
                    let mut g = Table::new();
                    g.insert("fill".into(), T::Float(k));
                    if freeze {
                        g.insert("freeze".into(), T::Boolean(true));
                    }
                    t.insert("goal".into(), T::Table(g));
                }
                (Some(d), None) => {
                    t.insert("duration".into(), T::String(fmt_secs(d)));
                }
                (None, None) => return err(*used_at, format!("phase {name:?} has no duration")),
            }
            for (i, (pgl, ours)) in FACTORS.iter().enumerate() {
                let beg = match f.value(&format!("{pgl}_beg")) {
                    Some((v, s)) => self.factor(&v, s, pgl)?,
                    None => prev[i],
                };
                let end = match f.value(&format!("{pgl}_end")) {
                    Some((v, s)) => self.factor(&v, s, pgl)?,
                    None => beg,
                };
                prev[i] = end;
                if beg != Factor::Number(1.0) || end != Factor::Number(1.0) {
                    t.insert(format!("{ours}_begin"), beg.toml());
                    t.insert(format!("{ours}_end"), end.toml());
                }
            }
            if name == "dark" {
                t.insert("dark".into(), T::Boolean(true));
                self.notes.push(Diagnostic::at(
                    *used_at,
                    "phase \"dark\" is the power cut of the downtime test",
                ));
            }
            // Statistics details: cacheoff keeps every interval anyway.
            for ignored in ["stats_samples", "synchronize", "primary"] {
                f.take(ignored);
            }
            f.rest(&mut self.unmodelled);
            let d = if fill.is_some() {
                0.0
            } else {
                duration.unwrap_or(0.0)
            };
            out.push((t, d, log_stats));
        }
        // Headline figures: the last of the longest timed phases that log
        // stats; with none, the last fill phase that does (PolyFill).
        let longest = out
            .iter()
            .filter(|(_, _, logged)| *logged)
            .map(|(_, d, _)| *d)
            .fold(0.0, f64::max);
        let measured = if longest > 0.0 {
            out.iter()
                .rposition(|(_, d, logged)| *logged && *d == longest)
        } else {
            out.iter()
                .rposition(|(t, _, logged)| *logged && t.contains_key("goal"))
        };
        if let Some(m) = measured {
            out[m].0.insert("measured".into(), T::Boolean(true));
            if let Some(T::String(d)) = out[m].0.get("duration").cloned() {
                self.t.insert("plateau".into(), T::String(d));
            }
        }
        if out.is_empty() {
            return err(
                crate::ast::Span::default(),
                "the file schedules no phases (schedule(...))",
            );
        }
        self.t.insert(
            "phases".into(),
            T::Array(out.into_iter().map(|(t, _, _)| T::Table(t)).collect()),
        );
        Ok(())
    }
}
