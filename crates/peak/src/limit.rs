//! Limits on a step's response time and errors, and the decision on one
//! step.

use cacheoff_base::Dur;
use std::fmt;
use std::str::FromStr;

/// Which response-time figure a limit holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtStat {
    Mean,
    P99,
}

impl RtStat {
    pub fn name(self) -> &'static str {
        match self {
            RtStat::Mean => "mean",
            RtStat::P99 => "p99",
        }
    }
}

/// A response-time limit: `p99<=50ms`, `mean<=0.2s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RtLimit {
    pub stat: RtStat,
    pub ms: f64,
}

/// A limit that does not parse; the message quotes the input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{input:?}: {why} (e.g. {examples})")]
pub struct LimitError {
    pub input: String,
    pub why: String,
    pub examples: &'static str,
}

const RT_EXAMPLES: &str = "'p99<=50ms', 'mean<=0.2s'";
const ERROR_EXAMPLES: &str = "'0.1%', '0%', '1%'";

impl FromStr for RtLimit {
    type Err = LimitError;
    fn from_str(s: &str) -> Result<RtLimit, LimitError> {
        let err = |why: String| LimitError {
            input: s.into(),
            why,
            examples: RT_EXAMPLES,
        };
        let (stat, value) = s
            .split_once("<=")
            .ok_or_else(|| err("expected STAT<=TIME".into()))?;
        let stat = match stat.trim().to_ascii_lowercase().as_str() {
            "mean" => RtStat::Mean,
            "p99" => RtStat::P99,
            other => return Err(err(format!("unknown statistic {other:?} (mean or p99)"))),
        };
        let value = value.trim();
        if value.chars().last().is_some_and(|c| c.is_ascii_digit()) {
            return Err(err(format!("{value:?} needs a time unit (ms, s)")));
        }
        let d: Dur = value.parse().map_err(|e| err(format!("{e}")))?;
        let ms = d.as_secs_f64() * 1e3;
        if ms <= 0.0 {
            return Err(err("the limit must be above zero".into()));
        }
        Ok(RtLimit { stat, ms })
    }
}

impl fmt::Display for RtLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}<={}ms", self.stat.name(), self.ms)
    }
}

/// Parses an error limit: a percentage of requests (`0.1%`).
pub fn parse_error_pct(s: &str) -> Result<f64, LimitError> {
    let err = |why: &str| LimitError {
        input: s.into(),
        why: why.into(),
        examples: ERROR_EXAMPLES,
    };
    let v = s
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| err("expected a percentage ending in %"))?;
    let pct: f64 = v.trim().parse().map_err(|_| err("expected a number"))?;
    if !(0.0..=100.0).contains(&pct) {
        return Err(err("expected 0% to 100%"));
    }
    Ok(pct)
}

/// What one step measured (its measured phase).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    /// Successful transactions per second.
    pub rate_xps: f64,
    pub xacts: u64,
    /// Response time from the intended start (the open-loop clock).
    pub rt_ms_mean: f64,
    pub rt_ms_p99: f64,
    /// Errors in percent of requests.
    pub error_pct: f64,
}

/// What a step must keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub rt: RtLimit,
    /// Most errors, in percent of requests.
    pub error_pct: f64,
}

impl Limits {
    /// The default error limit: 0.1% of requests.
    pub const DEFAULT_ERROR_PCT: f64 = 0.1;

    /// Parses `--rt-limit` and `--error-limit` (default 0.1%).
    pub fn parse(rt: &str, errors: Option<&str>) -> Result<Limits, LimitError> {
        Ok(Limits {
            rt: rt.parse()?,
            error_pct: errors
                .map(parse_error_pct)
                .transpose()?
                .unwrap_or(Self::DEFAULT_ERROR_PCT),
        })
    }

    /// Whether a step with these figures keeps the limits. A step that
    /// completed no transaction shows nothing and fails.
    pub fn judge(&self, f: &Figures) -> bool {
        let rt = match self.rt.stat {
            RtStat::Mean => f.rt_ms_mean,
            RtStat::P99 => f.rt_ms_p99,
        };
        f.xacts > 0 && rt <= self.rt.ms && f.error_pct <= self.error_pct
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, errors<={}%", self.rt, self.error_pct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_time_limits_parse_with_units() {
        let l: RtLimit = "p99<=50ms".parse().unwrap();
        assert_eq!((l.stat, l.ms), (RtStat::P99, 50.0));
        let l: RtLimit = " MEAN <= 0.2s".parse().unwrap();
        assert_eq!(l.stat, RtStat::Mean);
        assert!((l.ms - 200.0).abs() < 1e-9);
        assert_eq!(l.to_string(), "mean<=200ms");
    }

    #[test]
    fn bad_limits_say_what_is_wrong() {
        let e = |s: &str| s.parse::<RtLimit>().unwrap_err().to_string();
        assert!(
            e("p99<50ms").contains("expected STAT<=TIME"),
            "{}",
            e("p99<50ms")
        );
        assert!(e("p95<=50ms").contains("\"p95\""), "{}", e("p95<=50ms"));
        assert!(
            e("p99<=50").contains("needs a time unit"),
            "{}",
            e("p99<=50")
        );
        assert!(e("p99<=50qs").contains("50qs"), "{}", e("p99<=50qs"));
        assert!(e("p99<=0ms").contains("above zero"));
        assert!(e("p99<=5xms").starts_with("\"p99<=5xms\": "));
        let e = |s: &str| parse_error_pct(s).unwrap_err().to_string();
        assert!(e("0.1").contains("ending in %"));
        assert!(e("x%").contains("expected a number"));
        assert!(e("101%").contains("0% to 100%"));
        assert_eq!(parse_error_pct("0.1%").unwrap(), 0.1);
    }

    #[test]
    fn a_step_passes_inside_every_limit() {
        let limits = Limits::parse("p99<=50ms", None).unwrap();
        assert_eq!(limits.error_pct, 0.1);
        assert_eq!(limits.to_string(), "p99<=50ms, errors<=0.1%");
        let ok = Figures {
            rate_xps: 100.0,
            xacts: 1000,
            rt_ms_mean: 80.0,
            rt_ms_p99: 50.0,
            error_pct: 0.1,
        };
        assert!(limits.judge(&ok));
        assert!(!limits.judge(&Figures {
            rt_ms_p99: 50.1,
            ..ok
        }));
        assert!(!limits.judge(&Figures {
            error_pct: 0.2,
            ..ok
        }));
        assert!(!limits.judge(&Figures { xacts: 0, ..ok }));
        let mean = Limits::parse("mean<=50ms", Some("1%")).unwrap();
        assert!(!mean.judge(&ok));
        assert!(mean.judge(&Figures {
            rt_ms_mean: 49.0,
            error_pct: 0.9,
            ..ok
        }));
    }
}
