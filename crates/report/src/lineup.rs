//! The lineup's `summary.json`: the executive summary as data, one entry
//! per product and mode (with what the product spent, when its run
//! watched it) and, when exactly two runs are compared, B against A, for
//! tools outside (field meanings and the schema: docs/lineup.md,
//! docs/schema/lineup-summary.schema.json).
//!
//! [`LineupSummary::new`] builds it from the rows of the executive summary
//! ([`crate::compare::rows`]) and the baseline run; [`LineupSummary::write`]
//! writes it with paths relative to the file; it reads back with
//! [`LineupSummary::from_json`].

use crate::compare::Row;
use crate::{relative_path, ReportError, Run};
use cacheoff_rundir::Mode;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
    pub ab: Option<crate::compare::AbSummary>,
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
    pub conformance: Option<crate::compare::Conformance>,
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
    /// `complete`, `interrupted` or `no_summary`.
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

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

impl ProductSummary {
    fn of(r: &Row) -> ProductSummary {
        let d = r.downtime.unwrap_or_default();
        let measured = r.downtime.is_some();
        ProductSummary {
            name: r.name.clone().unwrap_or_else(|| r.label.clone()),
            mode: r.mode,
            run_dir: path_str(&r.run_dir),
            xacts: r.xacts,
            rate_xps: r.throughput,
            dhr_measured: r.dhr,
            dhr_offered: r.dhr_offered,
            rt_ms_hit: r.rt.hit,
            rt_ms_miss: r.rt.miss,
            rt_ms_all: r.rt.all,
            errors: r.errors,
            downtime: DowntimeSummary {
                ttfm_s: d.ttfm_s,
                ttfh_s: d.ttfh_s,
                first_conn_s: d.first_conn_s,
                precise: measured.then_some(d.precise),
            },
            msl: MslSummary {
                time_wait_s: r.msl.and_then(|m| m.time_wait_s),
                pass: r.msl.and_then(|m| m.verdict()),
            },
            conformance: r.conformance,
            disqualified: r.disqualified.clone(),
            label: r.label.clone(),
            version: r.version.clone(),
            workload: r.workload.clone(),
            phase: r.phase.clone(),
            state: r.state.name().into(),
            started_at: r.started_at.clone(),
            finished_at: r.finished_at.clone(),
            report: r.report.as_deref().map(path_str),
            downtime_dir: r.downtime_dir.as_deref().map(path_str),
            dhr_ideal: r.dhr_ideal,
            rt_polygraph_ms_hit: r.rt_polygraph.hit,
            rt_polygraph_ms_miss: r.rt_polygraph.miss,
            rt_polygraph_ms_all: r.rt_polygraph.all,
            savings_percent: r.rt.savings,
            savings_polygraph_percent: r.rt_polygraph.savings,
            errors_percent: r.errors_percent,
            price_usd: r.price,
            req_per_kusd: r.req_per_kusd,
            hits_per_kusd: r.hits_per_kusd,
            cache_age_h: r.cache_age_h,
            resources: r.resources.clone(),
        }
    }
}

impl LineupSummary {
    /// The summary of `rows` (in their order) against `baseline`. Paths
    /// are kept as the rows and the baseline hold them; see
    /// [`LineupSummary::relative_to`].
    pub fn new(rows: &[Row], baseline: Option<&Run>) -> LineupSummary {
        LineupSummary {
            format: format_name(),
            version: LINEUP_SUMMARY_VERSION,
            products: rows.iter().map(ProductSummary::of).collect(),
            baseline: baseline.map(|b| {
                let h = b.headline();
                BaselineSummary {
                    run_dir: path_str(&b.dir),
                    rt_ms_all: h.rt_ms.all.mean,
                    rt_polygraph_ms_all: h.rt_polygraph_ms.all.mean,
                    workload: b.manifest.workload.name.clone(),
                }
            }),
            ab: crate::compare::ab(rows).cloned(),
        }
    }

    /// The same summary with every path relative to `dir` where one leads
    /// there (relative paths are taken from the working directory).
    pub fn relative_to(&self, dir: &Path) -> LineupSummary {
        let rel = |s: &String| path_str(&relative_path(Path::new(s), dir));
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
    pub fn from_json(text: &str) -> Result<LineupSummary, String> {
        let s: LineupSummary = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if s.format != LINEUP_SUMMARY_FORMAT {
            return Err(format!("not a lineup summary (format {:?})", s.format));
        }
        if s.version > LINEUP_SUMMARY_VERSION {
            return Err(format!(
                "written by a newer cacheoff (format version {}; this one reads up to {LINEUP_SUMMARY_VERSION})",
                s.version
            ));
        }
        Ok(s)
    }

    /// Reads `path`.
    pub fn load(path: &Path) -> Result<LineupSummary, ReportError> {
        let bad = |why: String| ReportError::Summary {
            path: path.into(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        LineupSummary::from_json(&text).map_err(bad)
    }

    /// Writes the summary to `path` (atomically) with its paths relative
    /// to the file's directory; returns `path`.
    pub fn write(&self, path: &Path) -> Result<PathBuf, ReportError> {
        let bad = |e: std::io::Error| ReportError::Summary {
            path: path.into(),
            why: e.to_string(),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let text = self.relative_to(dir).to_json();
        let tmp = dir.join(format!(
            ".{}.tmp",
            path.file_name()
                .map_or("summary.json".into(), |n| n.to_string_lossy())
        ));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(bad)?;
        Ok(path.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::sample::row;
    use crate::compare::{Downtime, Msl};
    use serde_json::Value;

    /// A lineup of two products: Squid forward with its downtime and MSL
    /// tests, Varnish reverse that failed the MSL test, without either
    /// hit or miss figures of its own for a hit time.
    fn summary() -> LineupSummary {
        let squid = Row {
            label: "Squid".into(),
            name: Some("squid".into()),
            version: Some("5.7".into()),
            report: Some("out/squid-forward/report.html".into()),
            downtime_dir: Some("out/squid-forward-downtime".into()),
            downtime: Some(Downtime {
                ttfm_s: Some(3.1),
                ttfh_s: Some(6.25),
                first_conn_s: Some(1.85),
                precise: true,
            }),
            msl: Some(Msl {
                time_wait_s: Some(60.1),
                pass: Some(true),
            }),
            price: Some(2500.0),
            ..row("squid-forward", 40.0, 24.0)
        };
        let mut varnish = Row {
            label: "Varnish".into(),
            mode: Mode::Reverse,
            msl: Some(Msl {
                time_wait_s: Some(0.1),
                pass: None,
            }),
            ..row("varnish-reverse", 30.0, 20.0)
        };
        varnish.rt.hit = None;
        varnish.disqualified = varnish.check_rules();
        let mut s = LineupSummary::new(&[squid, varnish], None);
        s.baseline = Some(BaselineSummary {
            run_dir: "out/baseline".into(),
            rt_ms_all: 2800.0,
            rt_polygraph_ms_all: 2750.0,
            workload: "polymix-4".into(),
        });
        s
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn the_interface_s_names_are_kept() {
        let s = summary();
        let v: Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(
            keys(&v),
            ["ab", "baseline", "format", "products", "version"]
        );
        let p = &v["products"][0];
        for k in [
            "name",
            "mode",
            "run_dir",
            "xacts",
            "rate_xps",
            "dhr_measured",
            "dhr_offered",
            "rt_ms_hit",
            "rt_ms_miss",
            "rt_ms_all",
            "errors",
            "downtime",
            "msl",
            "disqualified",
        ] {
            assert!(p.get(k).is_some(), "no {k} in {p}");
        }
        assert_eq!(p["name"], "squid");
        assert_eq!(p["mode"], "forward");
        assert_eq!(p["run_dir"], "runs/squid-forward");
        assert_eq!(p["xacts"], 360_000);
        assert_eq!(p["rate_xps"], 100.0);
        assert_eq!(
            (&p["dhr_measured"], &p["dhr_offered"]),
            (&40.0.into(), &55.0.into())
        );
        assert_eq!(
            (&p["rt_ms_hit"], &p["rt_ms_all"]),
            (&10.0.into(), &40.0.into())
        );
        assert_eq!(p["rt_ms_miss"], 80.0);
        assert_eq!(
            keys(&p["downtime"]),
            ["first_conn_s", "precise", "ttfh_s", "ttfm_s"]
        );
        assert_eq!(p["downtime"]["ttfm_s"], 3.1);
        assert_eq!(p["downtime"]["first_conn_s"], 1.85);
        assert_eq!(keys(&p["msl"]), ["pass", "time_wait_s"]);
        assert_eq!(
            (&p["msl"]["time_wait_s"], &p["msl"]["pass"]),
            (&60.1.into(), &true.into())
        );
        assert_eq!(p["disqualified"], Value::Array(vec![]));
        assert_eq!(p["price_usd"], 2500.0);

        let q = &v["products"][1];
        assert_eq!(
            (&q["name"], &q["mode"]),
            (&"Varnish".into(), &"reverse".into())
        );
        assert_eq!(q["rt_ms_hit"], Value::Null);
        for k in ["ttfm_s", "ttfh_s", "first_conn_s", "precise"] {
            assert_eq!(q["downtime"][k], Value::Null, "{k}");
        }
        // The verdict follows from the TIME-WAIT when not given.
        assert_eq!(q["msl"]["pass"], false);
        assert_eq!(q["disqualified"][0], "TIME-WAIT 0.1 s, under 60 s");
        assert_eq!(
            keys(&v["baseline"]),
            ["rt_ms_all", "rt_polygraph_ms_all", "run_dir", "workload"]
        );
        assert_eq!(v["baseline"]["rt_ms_all"], 2800.0);

        let none = LineupSummary::new(&[], None);
        let v: Value = serde_json::from_str(&none.to_json()).unwrap();
        assert_eq!(v["baseline"], Value::Null);
    }

    #[test]
    fn it_reads_back_and_refuses_strangers() {
        let s = summary();
        assert_eq!(LineupSummary::from_json(&s.to_json()).unwrap(), s);
        // The interface's own fields are enough.
        let minimal = r#"{"products": [{"name": "squid", "mode": "forward", "run_dir": "squid",
            "xacts": 1, "rate_xps": 1.0, "dhr_measured": 50.0, "dhr_offered": 55.0,
            "rt_ms_hit": null, "rt_ms_miss": 2.5, "rt_ms_all": 2.0, "errors": 0,
            "downtime": {"ttfm_s": null, "ttfh_s": null, "first_conn_s": null},
            "msl": {"time_wait_s": null, "pass": null}, "disqualified": []}],
            "baseline": null}"#;
        let m = LineupSummary::from_json(minimal).unwrap();
        assert_eq!((m.version, m.products[0].rt_ms_miss), (1, Some(2.5)));
        let newer = s.to_json().replace("\"version\": 1,", "\"version\": 9,");
        assert!(LineupSummary::from_json(&newer)
            .unwrap_err()
            .contains("newer"));
        let other = s
            .to_json()
            .replace(LINEUP_SUMMARY_FORMAT, "cacheoff-summary");
        assert!(LineupSummary::from_json(&other).is_err());
    }

    #[test]
    fn written_with_paths_relative_to_the_file() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let mut s = summary();
        s.products[0].run_dir = path_str(&out.join("squid-forward"));
        s.products[0].downtime_dir = Some(path_str(&d.path().join("down")));
        s.baseline.as_mut().unwrap().run_dir = path_str(&out.join("baseline"));
        let path = s.write(&out.join("summary.json")).unwrap();
        let back = LineupSummary::load(&path).unwrap();
        assert_eq!(back.products[0].run_dir, "squid-forward");
        assert_eq!(back.products[0].downtime_dir.as_deref(), Some("../down"));
        assert_eq!(back.baseline.unwrap().run_dir, "baseline");
        assert!(LineupSummary::load(&out.join("nothing.json"))
            .unwrap_err()
            .to_string()
            .contains("nothing.json"));
    }

    /// Two runs compared, the first watched: B against A, and what A's
    /// product spent.
    fn two_watched() -> LineupSummary {
        let a = crate::html::sample::run(true, false);
        let b = crate::html::sample::run(false, true);
        let rows = crate::compare::rows(&[a, b], &Default::default(), None).unwrap();
        LineupSummary::new(&rows, None)
    }

    #[test]
    fn two_runs_carry_b_against_a_and_what_each_product_spent() {
        let s = two_watched();
        let v: Value = serde_json::from_str(&s.to_json()).unwrap();
        let spent = &v["products"][0]["resources"];
        assert_eq!(spent["phase"], "meas");
        assert_eq!(
            spent["cpu_ms_per_1k_hits"].as_f64().map(f64::round),
            Some(2000.0)
        );
        assert_eq!(v["products"][1]["resources"], Value::Null, "not watched");
        let ab = &v["ab"];
        assert_eq!(
            (&ab["method"], &ab["level"]),
            (&"batch-means-welch".into(), &0.95.into())
        );
        assert_eq!(ab["figures"][0]["name"], "rate_xps");
        assert!(ab["figures"][0]["ci_low"].is_number());
        assert_eq!(LineupSummary::from_json(&s.to_json()).unwrap(), s);
        // docs/lineup.md names every field of both.
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lineup.md"))
                .unwrap();
        for k in keys(spent)
            .into_iter()
            .chain(keys(ab))
            .chain(keys(&ab["figures"][0]))
        {
            let named = [format!("`{k}`"), format!("`{k}[]`")];
            assert!(
                named.iter().any(|n| doc.contains(n.as_str())),
                "docs/lineup.md lacks `{k}`"
            );
        }
    }

    #[test]
    fn it_matches_its_schema_which_is_strict() {
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../docs/schema/lineup-summary.schema.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors = |v: &Value| -> Vec<String> {
            validator
                .iter_errors(v)
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect()
        };
        let mut no_baseline = summary();
        no_baseline.baseline = None;
        for s in [
            summary(),
            no_baseline,
            LineupSummary::new(&[], None),
            two_watched(),
        ] {
            let v: Value = serde_json::from_str(&s.to_json()).unwrap();
            assert_eq!(errors(&v), Vec::<String>::new());
        }
        let v: Value = serde_json::from_str(&summary().to_json()).unwrap();
        // Every field the summary writes is in the schema, and the
        // interface's are required.
        let mut extra = v.clone();
        extra["products"][0]["surprise"] = 1.into();
        extra["products"][1]["downtime"]["surprise"] = 1.into();
        extra["baseline"]["surprise"] = 1.into();
        assert_eq!(errors(&extra).len(), 3, "{:?}", errors(&extra));
        let mut missing = v.clone();
        missing["products"][0]
            .as_object_mut()
            .unwrap()
            .remove("dhr_offered");
        missing["products"][0]["msl"]
            .as_object_mut()
            .unwrap()
            .remove("pass");
        assert_eq!(errors(&missing).len(), 2, "{:?}", errors(&missing));
    }
}
