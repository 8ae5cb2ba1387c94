//! Which objects robots ask for: how often they revisit one, how revisits
//! spread over the working set, and its hot slice.

use cacheoff_base::{Bytes, Dur};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which objects robots ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Popularity {
    /// Probability that a request revisits an object requested before
    /// (chosen by `model`); otherwise a new object is requested.
    pub recurrence: f64,
    /// How revisits spread over the working set.
    #[serde(default)]
    pub model: PopModel,
    /// Fill transactions within one phase after which every world's
    /// working set is frozen at its size (split among client hosts and
    /// workers by robots); `None`: never frozen.
    #[serde(default)]
    pub working_set_cap: Option<u64>,
    /// A slice of the working set that gets a share of the repeat requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_set: Option<HotSet>,
    /// Probability that a revisit takes the smallest cachable object among
    /// the chosen one and its four neighbours (PolyMix-4: 90%).
    #[serde(default)]
    pub bhr_discrimination: f64,
    /// Sets the working-set cap to peak rate x this, when no cap is given
    /// (PolyMix-3: 0.45 x 75% x 4 h); scaled with `--plateau`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_time: Option<Dur>,
    /// Sets the working-set cap to this many bytes of objects, i.e. this
    /// ÷ `working_set_object_size` objects, when no cap is given
    /// (WebAxe-4: 1 GB ÷ 11 KB); scaled with `--plateau`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_size: Option<Bytes>,
    /// The object size `working_set_size` counts objects by (Polygraph's
    /// 11 KB, about the mean of the PolyMix content).
    #[serde(
        default = "default_object_size",
        skip_serializing_if = "is_default_object_size"
    )]
    pub working_set_object_size: Bytes,
}

fn default_object_size() -> Bytes {
    Bytes(11 * Bytes::KB)
}

fn is_default_object_size(b: &Bytes) -> bool {
    *b == default_object_size()
}

impl Popularity {
    /// The working-set cap in objects that `working_set_size` gives, if
    /// set: its bytes ÷ `working_set_object_size`, at least one object.
    pub fn cap_from_size(&self) -> Option<u64> {
        let size = self.working_set_size?;
        let per = self.working_set_object_size.0.max(1);
        Some((size.0 / per).max(1))
    }
}

/// How revisits choose among the working set's objects.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PopModel {
    /// Every object of the working set alike.
    #[default]
    Uniform,
    /// Web Polygraph's zipf(α): the k-th most recently introduced object,
    /// k = floor((n+1)^(U^α)) for a working set of n, so recent objects are
    /// the popular ones (α = 1 gives P(k) = ln((k+1)/k) / ln(n+1)).
    Zipf(f64),
}

impl PopModel {
    /// The 1-based recency rank of a revisited object among `n`, from a
    /// uniform `u` in [0, 1).
    pub fn rank(&self, n: u64, u: f64) -> u64 {
        match *self {
            PopModel::Uniform => (u * n as f64) as u64 + 1,
            PopModel::Zipf(alpha) => ((n + 1) as f64).powf(u.powf(alpha)).floor() as u64,
        }
        .clamp(1, n.max(1))
    }
}

impl fmt::Display for PopModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopModel::Uniform => f.write_str("unif"),
            PopModel::Zipf(a) => write!(f, "zipf({a})"),
        }
    }
}

impl FromStr for PopModel {
    type Err = String;
    fn from_str(s: &str) -> Result<PopModel, String> {
        let s = s.trim();
        if s == "unif" {
            return Ok(PopModel::Uniform);
        }
        s.strip_prefix("zipf(")
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|a| a.trim().parse::<f64>().ok())
            .filter(|a| a.is_finite() && *a > 0.0)
            .map(PopModel::Zipf)
            .ok_or_else(|| {
                format!("invalid popularity model {s:?}: expected \"unif\" or \"zipf(A)\" with A > 0, e.g. \"zipf(1)\"")
            })
    }
}

impl Serialize for PopModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PopModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The hot set: `working_set` of the working set gets `requests` of the
/// repeat requests; it jumps to a new place when the working set slides
/// past it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotSet {
    pub working_set: f64,
    pub requests: f64,
}

impl Default for Popularity {
    fn default() -> Self {
        Popularity {
            recurrence: 0.55 / 0.8,
            model: PopModel::Uniform,
            working_set_cap: None,
            hot_set: None,
            bhr_discrimination: 0.0,
            working_set_time: None,
            working_set_size: None,
            working_set_object_size: default_object_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn popularity_models_parse_and_print() {
        assert_eq!("unif".parse::<PopModel>().unwrap(), PopModel::Uniform);
        assert_eq!(
            "zipf(0.8)".parse::<PopModel>().unwrap(),
            PopModel::Zipf(0.8)
        );
        assert_eq!(PopModel::Zipf(0.8).to_string(), "zipf(0.8)");
        for bad in ["zipf(0)", "zipf(-1)", "zipf", "pareto(1)"] {
            assert!(bad.parse::<PopModel>().is_err(), "{bad}");
        }
        // Uniform ranks cover 1..=n evenly.
        assert_eq!(PopModel::Uniform.rank(10, 0.0), 1);
        assert_eq!(PopModel::Uniform.rank(10, 0.999_999), 10);
    }
}
