//! A run's results: the JSON that outside checks read (`checks` with `id`,
//! `section`, `result`; `passed`, `failed`) and the table people read.

use crate::check::{Check, Outcome, Verdict};
use crate::client::Mode;
use serde::Serialize;
use std::time::Duration;

/// One check's result with the exchange that decided it.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub id: &'static str,
    pub section: &'static str,
    pub result: Verdict,
    pub title: &'static str,
    pub detail: String,
    /// Requests sent, what the origin saw, responses got, in order.
    pub exchange: Vec<String>,
}

impl CheckResult {
    pub fn new(c: &Check, o: Outcome, exchange: Vec<String>) -> CheckResult {
        CheckResult {
            id: c.id,
            section: c.section,
            result: o.verdict,
            title: c.title,
            detail: brief(o.detail),
            exchange,
        }
    }
}

/// A detail cut to a line's worth: bodies quoted in it can be whole
/// error pages (the exchange keeps their start too).
fn brief(detail: String) -> String {
    const MAX: usize = 160;
    match detail.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &detail[..i]),
        None => detail,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub mode: &'static str,
    pub checks: Vec<CheckResult>,
    pub passed: usize,
    pub failed: usize,
    pub optional: usize,
    pub seconds: f64,
}

impl Report {
    pub fn new(mode: Mode, checks: Vec<CheckResult>, took: Duration) -> Report {
        let count = |v| checks.iter().filter(|c| c.result == v).count();
        Report {
            mode: mode.name(),
            passed: count(Verdict::Pass),
            failed: count(Verdict::Fail),
            optional: count(Verdict::Optional),
            seconds: took.as_secs_f64(),
            checks,
        }
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The table: one line per check, the exchanges of failures, the score.
    pub fn table(&self) -> String {
        let w = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
        let s = self
            .checks
            .iter()
            .map(|c| c.section.len())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for c in &self.checks {
            out.push_str(&format!(
                "{:<8} {:<w$}  {:<s$}  {}\n",
                c.result.name(),
                c.id,
                c.section,
                c.detail
            ));
        }
        for c in self.checks.iter().filter(|c| c.result == Verdict::Fail) {
            out.push_str(&format!("\n{} ({}): {}\n", c.id, c.section, c.title));
            for line in &c.exchange {
                out.push_str(&format!("    {line}\n"));
            }
        }
        out.push_str(&format!(
            "\n{} mode: {} passed, {} failed, {} optional not done, of {} checks ({:.1} s)\n",
            self.mode,
            self.passed,
            self.failed,
            self.optional,
            self.checks.len(),
            self.seconds
        ));
        out
    }
}
