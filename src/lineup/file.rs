//! `LINEUP.toml`: which products a cache-off runs, in which modes, and the
//! settings every run shares. Command-line flags take precedence.

use anyhow::{anyhow, bail, Context};
use cacheoff_base::{Dur, Rate};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub use cacheoff_products::Mode;

/// The file as written (unknown keys are errors).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLineup {
    forward_workload: Option<String>,
    reverse_workload: Option<String>,
    /// `cacheoff run` workload flags (without `--`) and their values.
    #[serde(default)]
    settings: BTreeMap<String, toml::Value>,
    baseline: Option<bool>,
    /// Run the HTTP caching conformance suite against each product.
    conform: Option<bool>,
    #[serde(default)]
    downtime: RawDowntime,
    #[serde(default)]
    msl: RawMsl,
    #[serde(default)]
    peak: RawPeak,
    #[serde(default)]
    product: Vec<RawProduct>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeak {
    rt_limit: Option<String>,
    error_limit: Option<String>,
    step: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDowntime {
    enabled: Option<bool>,
    rate: Option<String>,
    warm: Option<String>,
    dark: Option<String>,
    after: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMsl {
    enabled: Option<bool>,
    timeout: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProduct {
    name: String,
    #[serde(default)]
    modes: Vec<Mode>,
    /// Workload flags for this product only (e.g. its cache size).
    #[serde(default)]
    settings: BTreeMap<String, toml::Value>,
    price_usd: Option<f64>,
}

/// One product of the lineup, in one or more modes.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// A product file name (`squid`) or path.
    pub name: String,
    /// Empty: every mode the product supports.
    pub modes: Vec<Mode>,
    pub settings: Vec<(String, String)>,
    pub price_usd: Option<f64>,
}

/// The downtime test's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Downtime {
    pub enabled: bool,
    /// Steady load during the test: fast enough for 0.1 s precision.
    pub rate: Rate,
    /// Load before the power cut (the cache holds the main run's objects
    /// too).
    pub warm: Dur,
    /// How long the power stays off.
    pub dark: Dur,
    /// Load after the power returns, within which TTFM and TTFH must come.
    pub after: Dur,
}

impl Default for Downtime {
    fn default() -> Self {
        Downtime {
            enabled: true,
            rate: Rate(50.0),
            warm: Dur::secs(10.0),
            dark: Dur::secs(5.0),
            after: Dur::secs(30.0),
        }
    }
}

/// Finding each product's peak first (`[peak]`, `--find-peak`): the
/// rate it sustains within the limits becomes its runs' peak rate.
#[derive(Debug, Clone, PartialEq)]
pub struct FindPeak {
    pub limits: cacheoff_peak::Limits,
    /// How long each step's plateau lasts (default: the workload's
    /// measured phase, as the lineup's settings make it).
    pub step: Option<Dur>,
}

impl FindPeak {
    pub fn parse(rt: &str, errors: Option<&str>, step: Option<String>) -> anyhow::Result<FindPeak> {
        Ok(FindPeak {
            limits: cacheoff_peak::Limits::parse(rt, errors).map_err(|e| anyhow!("peak: {e}"))?,
            step: step
                .map(|t| t.parse().map_err(|e| anyhow!("peak.step = {t:?}: {e}")))
                .transpose()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Msl {
    pub enabled: bool,
    pub timeout: Dur,
}

impl Default for Msl {
    fn default() -> Self {
        Msl {
            enabled: true,
            timeout: Dur::secs(180.0),
        }
    }
}

/// A resolved lineup.
#[derive(Debug, Clone, PartialEq)]
pub struct Lineup {
    pub forward_workload: String,
    pub reverse_workload: String,
    /// Workload flags every run gets, in order.
    pub settings: Vec<(String, String)>,
    pub baseline: bool,
    /// `cacheoff conform` against each product (a start of its own).
    pub conform: bool,
    pub downtime: Downtime,
    pub msl: Msl,
    /// Find each product's peak rate first.
    pub peak: Option<FindPeak>,
    pub products: Vec<Entry>,
    /// The two workloads as read ([`Lineup::open_workloads`]; until then
    /// each run reads its own).
    pub sources: Option<[cacheoff_run::workload::Source; 2]>,
}

impl Lineup {
    /// Reads the forward and reverse workloads once (a `.pg` file is
    /// imported here, its includes from its directory and `pgl.include`).
    pub fn open_workloads(&mut self, pgl: &crate::cli::PglArgs) -> Result<(), crate::Failure> {
        use cacheoff_run::workload::Source;
        self.sources = Some([
            Source::open(&self.forward_workload, &pgl.options())?,
            Source::open(&self.reverse_workload, &pgl.options())?,
        ]);
        Ok(())
    }

    /// The workload of `mode`'s runs, as read.
    pub fn source(
        &self,
        mode: cacheoff_products::Mode,
    ) -> Result<cacheoff_run::workload::Source, cacheoff_run::RunError> {
        let k = usize::from(mode == cacheoff_products::Mode::Reverse);
        match &self.sources {
            Some(s) => Ok(s[k].clone()),
            None => cacheoff_run::workload::Source::open(
                [&self.forward_workload, &self.reverse_workload][k],
                &Default::default(),
            ),
        }
    }
}

impl Default for Lineup {
    fn default() -> Self {
        Lineup {
            forward_workload: "polymix-3".into(),
            reverse_workload: "webaxe-4".into(),
            settings: Vec::new(),
            baseline: true,
            conform: true,
            downtime: Downtime::default(),
            msl: Msl::default(),
            peak: None,
            products: Vec::new(),
            sources: None,
        }
    }
}

fn setting_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn settings(
    raw: &BTreeMap<String, toml::Value>,
    at: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    raw.iter()
        .map(|(k, v)| {
            let text = setting_text(v);
            cacheoff_workload::Overrides::default()
                .set(k, &text)
                .map_err(|e| anyhow!("{at}: setting {k} = {text:?}: {e}"))?;
            Ok((k.clone(), text))
        })
        .collect()
}

fn dur(text: Option<String>, what: &str, default: Dur) -> anyhow::Result<Dur> {
    text.map_or(Ok(default), |t| {
        t.parse().map_err(|e| anyhow!("{what} = {t:?}: {e}"))
    })
}

impl Lineup {
    pub fn load(path: &Path) -> anyhow::Result<Lineup> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the lineup {}", path.display()))?;
        Lineup::parse(&text).with_context(|| format!("lineup {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Lineup> {
        let raw: RawLineup = toml::from_str(text)?;
        let d = Lineup::default();
        let downtime = Downtime {
            enabled: raw.downtime.enabled.unwrap_or(true),
            rate: match raw.downtime.rate {
                Some(t) => t
                    .parse()
                    .map_err(|e| anyhow!("downtime.rate = {t:?}: {e}"))?,
                None => d.downtime.rate,
            },
            warm: dur(raw.downtime.warm, "downtime.warm", d.downtime.warm)?,
            dark: dur(raw.downtime.dark, "downtime.dark", d.downtime.dark)?,
            after: dur(raw.downtime.after, "downtime.after", d.downtime.after)?,
        };
        if downtime.rate.0 <= 0.0 {
            bail!("downtime.rate must be above 0");
        }
        let products = raw
            .product
            .into_iter()
            .map(|p| {
                Ok(Entry {
                    settings: settings(&p.settings, &format!("product {}", p.name))?,
                    name: p.name,
                    modes: p.modes,
                    price_usd: p.price_usd,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let peak = match (raw.peak.rt_limit, raw.peak.error_limit, raw.peak.step) {
            (Some(rt), e, step) => Some(FindPeak::parse(&rt, e.as_deref(), step)?),
            (None, None, None) => None,
            _ => bail!("peak: give rt_limit (e.g. \"p99<=50ms\") to find each product's peak"),
        };
        Ok(Lineup {
            peak,
            forward_workload: raw.forward_workload.unwrap_or(d.forward_workload),
            reverse_workload: raw.reverse_workload.unwrap_or(d.reverse_workload),
            settings: settings(&raw.settings, "settings")?,
            baseline: raw.baseline.unwrap_or(true),
            conform: raw.conform.unwrap_or(true),
            downtime,
            msl: Msl {
                enabled: raw.msl.enabled.unwrap_or(true),
                timeout: dur(raw.msl.timeout, "msl.timeout", d.msl.timeout)?,
            },
            products,
            sources: None,
        })
    }

    /// Sets (or replaces) a workload flag for every run.
    pub fn set(&mut self, flag: &str, value: String) {
        self.settings.retain(|(k, _)| k != flag);
        self.settings.push((flag.to_string(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_names_products_modes_and_settings() {
        let l = Lineup::parse(
            r#"
            [settings]
            peak-rate = "100/s"
            plateau = "30s"
            [downtime]
            rate = "20/s"
            dark = "3s"
            [msl]
            enabled = false
            [[product]]
            name = "squid"
            modes = ["forward", "reverse"]
            settings = { cache-size = "32MB" }
            [[product]]
            name = "varnish"
            "#,
        )
        .unwrap();
        assert_eq!(l.forward_workload, "polymix-3");
        assert_eq!(
            l.settings,
            [
                ("peak-rate".to_string(), "100/s".to_string()),
                ("plateau".to_string(), "30s".to_string())
            ]
        );
        assert_eq!(l.downtime.rate, Rate(20.0));
        assert_eq!(l.downtime.dark, Dur::secs(3.0));
        assert!(!l.msl.enabled);
        assert_eq!(l.products[0].modes, [Mode::Forward, Mode::Reverse]);
        assert_eq!(l.products[0].settings[0].1, "32MB");
        assert!(l.products[1].modes.is_empty());
        assert_eq!(l.peak, None);
        let l = Lineup::parse("[peak]\nrt_limit = \"p99<=0.2s\"\nstep = \"20s\"\n").unwrap();
        let p = l.peak.unwrap();
        assert_eq!((p.limits.rt.ms, p.limits.error_pct), (200.0, 0.1));
        assert_eq!(p.step, Some(Dur::secs(20.0)));
        let e = Lineup::parse("[peak]\nstep = \"20s\"\n").unwrap_err();
        assert!(format!("{e:#}").contains("rt_limit"), "{e:#}");
        let e = Lineup::parse("[peak]\nrt_limit = \"p95<=1s\"\n").unwrap_err();
        assert!(format!("{e:#}").contains("p95"), "{e:#}");
    }

    #[test]
    fn mistakes_are_named() {
        let e = Lineup::parse("[settings]\nplateu = \"1min\"\n").unwrap_err();
        assert!(format!("{e:#}").contains("plateu"), "{e:#}");
        let e =
            Lineup::parse("[[product]]\nname = \"squid\"\nmodes = [\"sideways\"]\n").unwrap_err();
        assert!(format!("{e:#}").contains("sideways"), "{e:#}");
        let e = Lineup::parse("produkt = 1\n").unwrap_err();
        assert!(format!("{e:#}").contains("produkt"), "{e:#}");
    }
}
