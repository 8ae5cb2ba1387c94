//! A lineup's own files (docs/lineup.md), written into the lineup's
//! directory beside its products' run directories, and read back here:
//!
//! - `summary.json` ([`LineupSummary`], [`SUMMARY_FILE`]): the executive
//!   summary as data, one entry per product and mode (with what the
//!   product spent, when its run watched it) and, when exactly two runs
//!   are compared, B against A ([`AbSummary`]), for tools outside (the
//!   schema: docs/schema/lineup-summary.schema.json). `cacheoff_report`
//!   builds it from the executive summary's rows; `cacheoff compare
//!   --json` writes it anywhere.
//! - `products.toml` ([`Products`], [`PRODUCTS_FILE`]): which run is which
//!   product and the product's other tests, which `cacheoff compare
//!   --products` reads too.

mod products;

pub use products::{Conformance, Msl, Product, Products, PRODUCTS_FILE};

use crate::files::{relative_path, write_atomic};
use crate::{Mode, RunDirError};
use cacheoff_ab::FigureResult;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The summary's name in a lineup's directory.
pub const SUMMARY_FILE: &str = "summary.json";
pub const LINEUP_SUMMARY_FORMAT: &str = "cacheoff-lineup-summary";
/// Version of `summary.json`'s format; bumped on incompatible change.
pub const LINEUP_SUMMARY_VERSION: u32 = 1;

/// `summary.json` of a lineup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineupSummary {
    #[serde(default = "format_name")]
    pub format: String,
    #[serde(default = "format_version")]
    pub version: u32,
    pub products: Vec<ProductSummary>,
    /// The run without a proxy that time savings compare with.
    pub baseline: Option<BaselineSummary>,
    /// Exactly two runs compared: the second (B) against the first (A).
    #[serde(default)]
    pub ab: Option<AbSummary>,
}

fn format_name() -> String {
    LINEUP_SUMMARY_FORMAT.into()
}

fn format_version() -> u32 {
    LINEUP_SUMMARY_VERSION
}

/// One product in one mode: its main run's figures over the measured
/// phase (`top2` in PolyMix), its downtime and MSL tests, and the verdict.
/// Response times are means in milliseconds from the intended start
/// (`rt_ms_*`) and from the connection, as Web Polygraph
/// (`rt_polygraph_ms_*`); ratios are percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProductSummary {
    pub name: String,
    pub mode: Mode,
    pub run_dir: String,
    pub xacts: u64,
    pub rate_xps: f64,
    pub dhr_measured: f64,
    pub dhr_offered: f64,
    pub rt_ms_hit: Option<f64>,
    pub rt_ms_miss: Option<f64>,
    pub rt_ms_all: f64,
    pub errors: u64,
    pub downtime: DowntimeSummary,
    pub msl: MslSummary,
    /// The HTTP caching conformance suite's score; `null` when it did not
    /// run.
    #[serde(default)]
    pub conformance: Option<Conformance>,
    pub disqualified: Vec<String>,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub workload: String,
    /// The span the figures come from: the measured phase, or `total`.
    #[serde(default)]
    pub phase: String,
    /// `complete`, `interrupted` or `no_summary`; `not_run` for a
    /// contender of a lineup that never ran ([`ProductSummary::not_run`]).
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub report: Option<String>,
    /// The downtime run's directory.
    #[serde(default)]
    pub downtime_dir: Option<String>,
    #[serde(default)]
    pub dhr_ideal: f64,
    #[serde(default)]
    pub rt_polygraph_ms_hit: Option<f64>,
    #[serde(default)]
    pub rt_polygraph_ms_miss: Option<f64>,
    #[serde(default)]
    pub rt_polygraph_ms_all: f64,
    #[serde(default)]
    pub savings_percent: Option<f64>,
    #[serde(default)]
    pub savings_polygraph_percent: Option<f64>,
    #[serde(default)]
    pub errors_percent: f64,
    #[serde(default)]
    pub price_usd: Option<f64>,
    #[serde(default)]
    pub req_per_kusd: Option<f64>,
    #[serde(default)]
    pub hits_per_kusd: Option<f64>,
    #[serde(default)]
    pub cache_age_h: Option<f64>,
    /// What the product spent over the measured phase; `null` when the
    /// run did not watch it.
    #[serde(default)]
    pub resources: Option<cacheoff_resources::Resources>,
}

/// The downtime test's figures, in seconds after power returned (`null`:
/// not measured, or none before the run ended).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DowntimeSummary {
    pub ttfm_s: Option<f64>,
    pub ttfh_s: Option<f64>,
    pub first_conn_s: Option<f64>,
    /// To the millisecond from a timed power-on, or (`false`) upper bounds
    /// to the interval; `null` without a downtime run.
    #[serde(default)]
    pub precise: Option<bool>,
}

/// The MSL test (`null`: not run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MslSummary {
    pub time_wait_s: Option<f64>,
    pub pass: Option<bool>,
}

/// The run without a proxy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSummary {
    pub run_dir: String,
    pub rt_ms_all: f64,
    #[serde(default)]
    pub rt_polygraph_ms_all: f64,
    #[serde(default)]
    pub workload: String,
}

/// B (the second run compared) against A (the first), as
/// `cacheoff_report` judges two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSummary {
    /// The products as shown.
    pub a: String,
    pub b: String,
    /// Always `batch-means-welch` (`cacheoff_ab::METHOD_BATCHES`).
    pub method: String,
    pub level: f64,
    /// In the order of `cacheoff_ab::FIGURES`, the figures both runs'
    /// measured phases have in their intervals.
    pub figures: Vec<FigureResult>,
}

/// Why a text is not a lineup summary this cacheoff reads.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("not a lineup summary (format {0:?})")]
    NotASummary(String),
    #[error("written by a newer cacheoff (format version {0}; this one reads up to {LINEUP_SUMMARY_VERSION})")]
    Newer(u32),
}

impl ProductSummary {
    /// A lineup's contender that never ran (state `not_run`): no figures,
    /// disqualified for `why` (`did not run` when empty).
    pub fn not_run(name: String, mode: Mode, label: String, why: Vec<String>) -> ProductSummary {
        ProductSummary {
            name,
            mode,
            run_dir: String::new(),
            xacts: 0,
            rate_xps: 0.0,
            dhr_measured: 0.0,
            dhr_offered: 0.0,
            rt_ms_hit: None,
            rt_ms_miss: None,
            rt_ms_all: 0.0,
            errors: 0,
            downtime: DowntimeSummary::default(),
            msl: MslSummary::default(),
            conformance: None,
            disqualified: if why.is_empty() {
                vec!["did not run".into()]
            } else {
                why
            },
            label,
            version: None,
            workload: String::new(),
            phase: String::new(),
            state: "not_run".into(),
            started_at: String::new(),
            finished_at: None,
            report: None,
            downtime_dir: None,
            dhr_ideal: 0.0,
            rt_polygraph_ms_hit: None,
            rt_polygraph_ms_miss: None,
            rt_polygraph_ms_all: 0.0,
            savings_percent: None,
            savings_polygraph_percent: None,
            errors_percent: 0.0,
            price_usd: None,
            req_per_kusd: None,
            hits_per_kusd: None,
            cache_age_h: None,
            resources: None,
        }
    }
}

impl LineupSummary {
    /// A summary of `products` against `baseline`, in this format.
    pub fn new(
        products: Vec<ProductSummary>,
        baseline: Option<BaselineSummary>,
        ab: Option<AbSummary>,
    ) -> LineupSummary {
        LineupSummary {
            format: format_name(),
            version: LINEUP_SUMMARY_VERSION,
            products,
            baseline,
            ab,
        }
    }

    /// The same summary with every path relative to `dir` where one leads
    /// there (relative paths are taken from the working directory).
    pub fn relative_to(&self, dir: &Path) -> LineupSummary {
        let rel = |s: &String| relative_path(Path::new(s), dir).display().to_string();
        let mut s = self.clone();
        for p in &mut s.products {
            p.run_dir = rel(&p.run_dir);
            p.report = p.report.as_ref().map(rel);
            p.downtime_dir = p.downtime_dir.as_ref().map(rel);
        }
        if let Some(b) = &mut s.baseline {
            b.run_dir = rel(&b.run_dir);
        }
        s
    }

    /// Pretty JSON, with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("the summary serializes");
        s.push('\n');
        s
    }

    /// Reads a summary back, refusing another format or a newer version.
    pub fn from_json(text: &str) -> Result<LineupSummary, SummaryError> {
        let s: LineupSummary = serde_json::from_str(text)?;
        if s.format != LINEUP_SUMMARY_FORMAT {
            return Err(SummaryError::NotASummary(s.format));
        }
        if s.version > LINEUP_SUMMARY_VERSION {
            return Err(SummaryError::Newer(s.version));
        }
        Ok(s)
    }

    /// Reads the summary at `path` (a lineup's is its directory's
    /// [`SUMMARY_FILE`]).
    pub fn read(path: &Path) -> Result<LineupSummary, RunDirError> {
        let bad = |why: String| RunDirError::Read {
            path: path.into(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        LineupSummary::from_json(&text).map_err(|e| bad(e.to_string()))
    }

    /// Writes the summary to `path` (atomically) with its paths relative
    /// to the file's directory; returns `path`.
    pub fn write(&self, path: &Path) -> Result<PathBuf, RunDirError> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let text = self.relative_to(dir).to_json();
        write_atomic(path, text.as_bytes()).map_err(|source| RunDirError::Write {
            path: path.into(),
            source,
        })?;
        Ok(path.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Squid, which ran, with its downtime and MSL tests; Varnish, which
    /// never did.
    fn summary() -> LineupSummary {
        let squid = ProductSummary {
            run_dir: "runs/squid-forward".into(),
            xacts: 360_000,
            rate_xps: 100.0,
            rt_ms_all: 40.0,
            downtime: DowntimeSummary {
                ttfm_s: Some(3.1),
                ttfh_s: None,
                first_conn_s: Some(1.85),
                precise: Some(true),
            },
            msl: MslSummary {
                time_wait_s: Some(60.1),
                pass: Some(true),
            },
            conformance: Some(Conformance {
                passed: 40,
                failed: 2,
                optional: 3,
            }),
            disqualified: Vec::new(),
            state: "complete".into(),
            downtime_dir: Some("runs/squid-forward-downtime".into()),
            ..ProductSummary::not_run("squid".into(), Mode::Forward, "Squid".into(), Vec::new())
        };
        let varnish = ProductSummary::not_run(
            "varnish".into(),
            Mode::Reverse,
            "Varnish".into(),
            vec!["did not start".into()],
        );
        LineupSummary::new(
            vec![squid, varnish],
            Some(BaselineSummary {
                run_dir: "runs/baseline".into(),
                rt_ms_all: 2800.0,
                rt_polygraph_ms_all: 2750.0,
                workload: "polymix-4".into(),
            }),
            None,
        )
    }

    #[test]
    fn it_reads_back_and_refuses_strangers() {
        let s = summary();
        assert_eq!(LineupSummary::from_json(&s.to_json()).unwrap(), s);
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(
            (&v["format"], &v["version"]),
            (&"cacheoff-lineup-summary".into(), &1.into())
        );
        assert_eq!(v["products"][1]["state"], "not_run");
        assert_eq!(v["products"][1]["disqualified"][0], "did not start");
        assert_eq!(
            ProductSummary::not_run("a".into(), Mode::Forward, "A".into(), Vec::new()).disqualified,
            ["did not run"]
        );
        // The interface's own fields are enough.
        let minimal = r#"{"products": [{"name": "squid", "mode": "forward", "run_dir": "squid",
            "xacts": 1, "rate_xps": 1.0, "dhr_measured": 50.0, "dhr_offered": 55.0,
            "rt_ms_hit": null, "rt_ms_miss": 2.5, "rt_ms_all": 2.0, "errors": 0,
            "downtime": {"ttfm_s": null, "ttfh_s": null, "first_conn_s": null},
            "msl": {"time_wait_s": null, "pass": null}, "disqualified": []}],
            "baseline": null}"#;
        let m = LineupSummary::from_json(minimal).unwrap();
        assert_eq!((m.version, m.products[0].rt_ms_miss), (1, Some(2.5)));
        assert_eq!(m.format, LINEUP_SUMMARY_FORMAT);
        let newer = s.to_json().replace("\"version\": 1,", "\"version\": 9,");
        assert!(matches!(
            LineupSummary::from_json(&newer),
            Err(SummaryError::Newer(9))
        ));
        let other = s
            .to_json()
            .replace(LINEUP_SUMMARY_FORMAT, "cacheoff-summary");
        assert!(matches!(
            LineupSummary::from_json(&other),
            Err(SummaryError::NotASummary(_))
        ));
        assert!(LineupSummary::from_json("{").is_err());
    }

    #[test]
    fn written_atomically_with_paths_relative_to_the_file() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let at = |p: PathBuf| p.display().to_string();
        let mut s = summary();
        s.products[0].run_dir = at(out.join("squid-forward"));
        s.products[0].downtime_dir = Some(at(d.path().join("down")));
        s.baseline.as_mut().unwrap().run_dir = at(out.join("baseline"));
        let path = s.write(&out.join(SUMMARY_FILE)).unwrap();
        assert_eq!(path, out.join(SUMMARY_FILE));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"), "pretty, one line feed at the end");
        assert_eq!(
            std::fs::read_dir(&out).unwrap().count(),
            1,
            "no temporary file left"
        );
        let back = LineupSummary::read(&path).unwrap();
        assert_eq!(back.products[0].run_dir, "squid-forward");
        assert_eq!(back.products[0].downtime_dir.as_deref(), Some("../down"));
        assert_eq!(back.products[1].run_dir, "", "no run: nothing to relate");
        assert_eq!(back.baseline.as_ref().unwrap().run_dir, "baseline");
        assert_eq!(back, s.relative_to(&out));
        let missing = LineupSummary::read(&out.join("nothing.json")).unwrap_err();
        assert!(missing.to_string().contains("nothing.json"), "{missing}");
        let peak = r#"{"format": "cacheoff-peak", "products": [], "baseline": null}"#;
        std::fs::write(out.join("peak.json"), peak).unwrap();
        let e = LineupSummary::read(&out.join("peak.json")).unwrap_err();
        assert!(
            e.to_string().contains("peak.json") && e.to_string().contains("not a lineup summary"),
            "{e}"
        );
    }
}
