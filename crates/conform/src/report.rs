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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{fail, optional, pass, Applies};

    fn chk(id: &'static str) -> Check {
        Check {
            id,
            section: "RFC 9111 §0",
            title: "t",
            applies: Applies::Both,
            run: |_| pass(""),
        }
    }

    #[test]
    fn the_json_has_the_names_outside_checks_read() {
        let results = vec![
            CheckResult::new(&chk("a"), pass("ok"), vec!["> GET /a".into()]),
            CheckResult::new(&chk("b"), fail("no"), vec![]),
            CheckResult::new(&chk("c"), optional("may"), vec![]),
            CheckResult::new(&chk("d"), pass("x".repeat(500)), vec![]),
        ];
        let r = Report::new(Mode::Forward, results, Duration::from_secs(1));
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(
            (v["passed"].as_u64(), v["failed"].as_u64()),
            (Some(2), Some(1))
        );
        let results: Vec<&str> = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["result"].as_str().unwrap())
            .collect();
        assert_eq!(results, ["pass", "fail", "optional", "pass"]);
        assert_eq!(v["checks"][0]["id"], "a");
        assert_eq!(v["checks"][0]["section"], "RFC 9111 §0");
        assert_eq!(v["checks"][0]["exchange"][0], "> GET /a");
        // Details are cut to a line.
        assert!(v["checks"][3]["detail"].as_str().unwrap().chars().count() <= 161);
        // The table shows the failure's exchange heading and the score.
        let t = r.table();
        assert!(t.contains("\nb (RFC 9111 §0): t\n"), "{t}");
        assert!(
            t.contains("2 passed, 1 failed, 1 optional not done, of 4 checks"),
            "{t}"
        );
    }
}
