//! The lineup's `summary.json` (`cacheoff_rundir::lineup::LineupSummary`:
//! its format, writing and reading are the run directory's) built from
//! the executive summary's rows ([`crate::compare::rows`]) and the
//! baseline run: [`summary`].

use crate::compare::Row;
use crate::Run;
use cacheoff_rundir::lineup::{
    BaselineSummary, DowntimeSummary, LineupSummary, MslSummary, ProductSummary,
};
use std::path::Path;

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// One row's entry.
fn product(r: &Row) -> ProductSummary {
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

/// The summary of `rows` (in their order) against `baseline`, with B
/// against A when the rows are two. Paths are kept as the rows and the
/// baseline hold them; `LineupSummary::write` makes them relative to the
/// file.
pub fn summary(rows: &[Row], baseline: Option<&Run>) -> LineupSummary {
    LineupSummary::new(
        rows.iter().map(product).collect(),
        baseline.map(|b| {
            let h = b.headline();
            BaselineSummary {
                run_dir: path_str(&b.dir),
                rt_ms_all: h.rt_ms.all.mean,
                rt_polygraph_ms_all: h.rt_polygraph_ms.all.mean,
                workload: b.manifest.workload.name.clone(),
            }
        }),
        crate::compare::ab(rows).cloned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::sample::row;
    use crate::compare::Downtime;
    use cacheoff_rundir::lineup::Msl;
    use cacheoff_rundir::Mode;
    use serde_json::Value;

    /// A lineup of two products: Squid forward with its downtime and MSL
    /// tests, Varnish reverse that failed the MSL test, without either
    /// hit or miss figures of its own for a hit time.
    fn lineup() -> LineupSummary {
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
        let mut s = summary(&[squid, varnish], None);
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
        let s = lineup();
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

        let none = summary(&[], None);
        let v: Value = serde_json::from_str(&none.to_json()).unwrap();
        assert_eq!(v["baseline"], Value::Null);
    }

    /// Two runs compared, the first watched: B against A, and what A's
    /// product spent.
    fn two_watched() -> LineupSummary {
        let a = crate::html::sample::run(true, false);
        let b = crate::html::sample::run(false, true);
        let rows = crate::compare::rows(&[a, b], &Default::default(), None).unwrap();
        summary(&rows, None)
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
        let mut no_baseline = lineup();
        no_baseline.baseline = None;
        // A lineup lists a contender that never ran too.
        let mut never = lineup();
        never.products.push(ProductSummary::not_run(
            "nginx".into(),
            Mode::Reverse,
            "nginx".into(),
            Vec::new(),
        ));
        for s in [
            lineup(),
            no_baseline,
            never,
            summary(&[], None),
            two_watched(),
        ] {
            let v: Value = serde_json::from_str(&s.to_json()).unwrap();
            assert_eq!(errors(&v), Vec::<String>::new());
        }
        let v: Value = serde_json::from_str(&lineup().to_json()).unwrap();
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
