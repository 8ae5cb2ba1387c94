//! The documentation of the run directory covers every field and error kind
//! that cacheoff writes.

use crate::support;

use cacheoff_stats::{Accum, ErrorKind};
use cacheoff_workload::RequestType;
use cacheoff_workload::{load, Overrides};
use serde_json::Value;
use support::process::{cacheoff, stdout};
use support::repo_file;

fn doc() -> String {
    repo_file("docs/run-directory.md")
}

fn leaf_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaf_paths(v, &p, out);
            }
        }
        Value::Array(a) if !a.is_empty() => leaf_paths(&a[0], &format!("{prefix}[]"), out),
        _ => out.push(prefix.to_string()),
    }
}

#[test]
fn every_error_kind_is_documented_with_its_description() {
    let d = doc();
    for k in ErrorKind::ALL {
        let row = format!("| `{}` | {} |", k.name(), k.description());
        assert!(
            d.contains(&row),
            "docs/run-directory.md lacks the row: {row}"
        );
    }
}

#[test]
fn every_entry_field_is_documented() {
    let d = doc();
    let mut acc = Accum::default();
    acc.snap.record_error(ErrorKind::BodyMismatch);
    let entry = serde_json::to_value(acc.entry("x", &["object".to_string()])).unwrap();
    let mut paths = Vec::new();
    leaf_paths(&entry, "", &mut paths);
    for p in paths {
        let parts: Vec<&str> = p.split('.').collect();
        let last = parts[parts.len() - 1];
        let parent = parts[..parts.len() - 1].join(".");
        let (head, leaf) = if parent == "errors.by_kind" || parent == "request_types" {
            // Maps keyed by a closed set's names (checked below).
            (parent.clone(), parent)
        } else if parent.starts_with("content_types") {
            // Keyed by the workload's content type names.
            ("content_types".to_string(), last.to_string())
        } else if ["count", "mean", "p50", "p99", "max"].contains(&last) && parts.len() > 1 {
            // Latency summaries: `rt_ms.all` is documented, with the leaf
            // names (`mean`, `p99`, ...) listed once.
            (parts[..parts.len() - 1].join("."), last.to_string())
        } else {
            (p.clone(), p.clone())
        };
        assert!(
            d.contains(&format!("`{head}")),
            "docs lack `{head}` (from {p})"
        );
        assert!(
            d.contains(&format!("`{leaf}")),
            "docs lack `{leaf}` (from {p})"
        );
    }
}

#[test]
fn every_request_type_is_documented() {
    let d = doc();
    for t in RequestType::ALL {
        assert!(
            d.contains(&format!("`{}`", t.name())),
            "docs lack request type {}",
            t.name()
        );
    }
}

#[test]
fn every_workload_field_is_documented() {
    let d = doc();
    let w = serde_json::to_value(load("simple", &Overrides::default()).unwrap()).unwrap();
    let mut paths = Vec::new();
    leaf_paths(&w, "", &mut paths);
    for p in paths {
        let documented = if let Some(rest) = p.strip_prefix("phases[].") {
            d.contains("`phases[]`") && d.contains(&format!("`{rest}`"))
        } else {
            d.contains(&format!("`{p}`"))
        };
        assert!(
            documented,
            "docs/run-directory.md lacks workload field `{p}`"
        );
    }
}

#[test]
fn every_proxy_fault_is_documented_and_in_the_help() {
    let doc = repo_file("docs/proxy.md");
    let help = stdout(&cacheoff(&["proxy", "--help"]))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for f in cacheoff_proxy::Fault::ALL {
        let row = format!("| `{}` |", f.name());
        assert!(
            doc.contains(&row),
            "docs/proxy.md lacks the fault {}",
            f.name()
        );
        assert!(
            help.contains(&format!(" {},", f.name())) || help.contains(&format!(" {} (", f.name())),
            "cacheoff proxy --help lacks the fault {}",
            f.name()
        );
    }
}

fn workload_doc() -> String {
    repo_file("docs/workload-files.md")
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_workload_setting_is_documented_and_in_the_run_help() {
    let doc = workload_doc();
    let help = squeeze(&stdout(&cacheoff(&["run", "--help"])));
    for p in Overrides::PARAMS {
        // A flag that may be given bare (`--tls`) shows its value as optional.
        let (value, help_value) = match p.bare {
            Some(_) => (
                format!("[{}]", p.value_name),
                format!("[<{}>]", p.value_name),
            ),
            None => (p.value_name.to_string(), format!("<{}>", p.value_name)),
        };
        let row = format!("| `--{} {value}` | `{}` | {} |", p.flag, p.key, p.help);
        assert!(doc.contains(&row), "docs/workload-files.md lacks: {row}");
        if let Some(default) = p.default {
            let row = format!("| `{}` | {default} |", p.key);
            assert!(doc.contains(&row), "docs/workload-files.md lacks: {row}");
        }
        let line = squeeze(&format!("--{} {help_value} {}", p.flag, p.help));
        assert!(help.contains(&line), "cacheoff run --help lacks: {line}");
        if let Some(alias) = p.alias {
            assert!(help.contains(&format!("--{alias}]")), "no alias --{alias}");
        }
    }
}

/// The keys a table of a workload file accepts, as its answer to an
/// unknown key lists them.
fn accepted_keys(table: &str) -> Vec<String> {
    let text = format!("{table}\nno_such_key = 1\n");
    let e = cacheoff_workload::load_text("w.toml", &text, &Overrides::default())
        .unwrap_err()
        .to_string();
    let (_, list) = e.split_once("expected").unwrap_or_else(|| panic!("{e}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[test]
fn every_workload_file_key_is_documented() {
    let doc = workload_doc();
    // Tables whose keys have rows of their own, `| `prefix.key` |`.
    for (table, prefix) in [
        ("", ""),
        ("[robots]", "robots."),
        ("[servers]", "servers."),
        ("[popularity]", "popularity."),
        ("[requests]", "requests."),
        ("[aborts]", "aborts."),
        ("[timeouts]", "timeouts."),
        ("[[content]]", "content."),
        ("[[content]]\n[content.life_cycle]", "content.life_cycle."),
    ] {
        let keys = accepted_keys(table);
        assert!(keys.len() > 1, "{table:?}: {keys:?}");
        for k in keys {
            let rows = [
                format!("| `{prefix}{k}` |"),
                format!("| `{prefix}{k}."),
                format!("| `[[{prefix}{k}]]` |"),
            ];
            assert!(
                rows.iter().any(|r| doc.contains(r)),
                "docs/workload-files.md has no row for `{prefix}{k}`"
            );
        }
    }
    // Tables written inline, whose keys their parent's row shows.
    for (table, parent) in [
        ("[servers.link]", "| `servers.link` |"),
        ("[robots.link]", "| `robots.link` |"),
        ("[popularity.hot_set]", "| `popularity.hot_set` |"),
        ("[[content]]\n[content.embeds]", "| `content.embeds` |"),
        (
            "[[content]]\n[[content.extensions]]",
            "| `content.extensions` |",
        ),
        ("[[phases]]", "| `[[phases]]` |"),
        ("[[phases]]\n[phases.goal]", "| `[[phases]]` |"),
    ] {
        let row = doc.lines().find(|l| l.starts_with(parent)).unwrap();
        for k in accepted_keys(table) {
            assert!(
                row.contains(&format!("`{k}`")) || row.contains(&format!("{k} = ")),
                "the row {parent} does not show `{k}`"
            );
        }
    }
}

#[test]
fn documented_workload_defaults_are_the_defaults() {
    let doc = workload_doc();
    // A file with one content type and one phase: writing a key's
    // documented default into it must change nothing.
    let file = |top: &str, content: &str| {
        let text = format!(
            "requests.basic = 1.0\n{top}[[phases]]\nname = \"a\"\nduration = \"1s\"\n\
             [[content]]\nname = \"a\"\nshare = 1.0\nsize = \"1KB\"\ncachable = 1.0\n{content}"
        );
        cacheoff_workload::load_text("w.toml", &text, &Overrides::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    };
    let plain = file("", "");
    let literal = |cell: &str| {
        cell.strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .filter(|c| !c.contains('`'))
            .map(str::to_string)
    };
    let mut checked = 0;
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, key, default, ..] = cells[..] else {
            continue;
        };
        let (Some(key), Some(value)) = (literal(key), literal(default)) else {
            continue;
        };
        if key.starts_with("--") || key.starts_with("[[") {
            continue;
        }
        let w = match key.strip_prefix("content.") {
            Some(k) => file("", &format!("{k} = {value}\n")),
            None => file(&format!("{key} = {value}\n"), ""),
        };
        assert_eq!(w, plain, "`{key}` does not default to {value}");
        checked += 1;
    }
    assert!(checked > 30, "only {checked} defaults checked");
}

#[test]
fn every_counter_is_documented_with_its_description() {
    let d = doc();
    for c in cacheoff_stats::Counter::ALL {
        let row = format!("| `counts.{}` | {} |", c.name(), c.description());
        assert!(
            d.contains(&row),
            "docs/run-directory.md lacks the row: {row}"
        );
    }
}

fn lineup_doc() -> String {
    repo_file("docs/lineup.md")
}

/// The keys a deny-unknown-fields table accepts, as serde's answer to an
/// unknown one lists them (`expected one of `a`, `b``).
fn expected_keys(error: &str) -> Vec<String> {
    let (_, list) = error
        .split_once("expected")
        .unwrap_or_else(|| panic!("{error}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[test]
fn every_products_file_key_is_documented() {
    use cacheoff_rundir::lineup::Products;
    let doc = lineup_doc();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("products.toml");
    let refused = |extra: &str| {
        std::fs::write(
            &path,
            format!("[[product]]\nrun = \"a\"\nlabel = \"A\"\n{extra}\n"),
        )
        .unwrap();
        Products::load(&path).unwrap_err().to_string()
    };
    let keys = expected_keys(&refused("no_such_key = 1"));
    assert!(keys.len() >= 8, "{keys:?}");
    for k in &keys {
        assert!(
            doc.contains(&format!("| `{k}` |")),
            "docs/lineup.md has no row for products.toml's `{k}`"
        );
    }
    let msl_row = doc.lines().find(|l| l.starts_with("| `msl` |")).unwrap();
    for k in expected_keys(&refused("msl = { no_such_key = 1 }")) {
        assert!(msl_row.contains(&format!("`{k}`")), "msl row lacks `{k}`");
    }
}

#[test]
fn every_lineup_summary_field_is_documented_and_in_the_schema() {
    use cacheoff_rundir::lineup::LineupSummary;
    let doc = lineup_doc();
    // The interface's fields alone; the rest are written with defaults.
    let minimal = r#"{"products": [{"name": "a", "mode": "forward", "run_dir": "a",
        "xacts": 1, "rate_xps": 1.0, "dhr_measured": 1.0, "dhr_offered": 1.0,
        "rt_ms_hit": null, "rt_ms_miss": null, "rt_ms_all": 1.0, "errors": 0,
        "downtime": {"ttfm_s": null, "ttfh_s": null, "first_conn_s": null},
        "msl": {"time_wait_s": null, "pass": null}, "disqualified": []}],
        "baseline": {"run_dir": "b", "rt_ms_all": 1.0}}"#;
    let s = LineupSummary::from_json(minimal).unwrap();
    let v: Value = serde_json::from_str(&s.to_json()).unwrap();
    let mut paths = Vec::new();
    leaf_paths(&v, "", &mut paths);
    let schema: Value =
        serde_json::from_str(&repo_file("docs/schema/lineup-summary.schema.json")).unwrap();
    let schema_props = |def: Option<&str>| -> Vec<String> {
        let node = match def {
            Some(d) => &schema["$defs"][d],
            None => &schema,
        };
        node["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    for p in &paths {
        let (section, field) = match p.split_once('.') {
            Some((top, rest)) => (top.trim_end_matches("[]"), rest),
            None => ("", p.as_str()),
        };
        assert!(
            doc.contains(&format!("`{field}`")),
            "docs/lineup.md lacks summary.json's `{p}`"
        );
        let top = field.split('.').next().unwrap();
        let props = match section {
            "" => schema_props(None),
            "products" => schema_props(Some("product")),
            "baseline" => schema_props(Some("baseline")),
            other => panic!("{other}"),
        };
        assert!(props.contains(&top.to_string()), "schema lacks `{p}`");
    }
    assert!(paths.len() > 40, "{paths:?}");
    // And the schema knows no field the summary does not write.
    for (def, node) in [
        (None, &v),
        (Some("product"), &v["products"][0]),
        (Some("baseline"), &v["baseline"]),
    ] {
        for k in schema_props(def) {
            assert!(
                node.get(&k).is_some(),
                "the schema's `{k}` is never written"
            );
        }
    }
}

#[test]
fn every_peak_file_field_is_documented() {
    use cacheoff_rundir::peak::{Limit, Peak, PeakStep};
    // Every optional field present.
    let p = Peak {
        format: "cacheoff-peak".into(),
        version: 1,
        workload: "simple".into(),
        closed_loop: true,
        peak_rate_xps: Some(1.0),
        peak_robots: Some(2),
        outcome: "found".into(),
        precision: 0.05,
        limit: Limit {
            text: "p99<=50ms, errors<=0.1%".into(),
            rt_stat: "p99".into(),
            rt_ms: 50.0,
            error_pct: 0.1,
        },
        warmup_dir: Some("warmup".into()),
        steps: vec![PeakStep {
            rate_xps: 1.0,
            robots: Some(2),
            throughput_xps: 1.0,
            rt_ms_mean: 1.0,
            rt_ms_p99: 1.0,
            error_pct: 0.0,
            pass: true,
            confirm: true,
            recheck: false,
            dir: "step-01-2robots".into(),
        }],
    };
    let d = doc();
    let section = &d[d.find("## `peak.json`").unwrap()..];
    let section = &section[..section[3..].find("\n## ").unwrap()];
    let mut paths = Vec::new();
    leaf_paths(&serde_json::to_value(&p).unwrap(), "", &mut paths);
    assert!(paths.len() >= 20, "{paths:?}");
    for path in paths {
        assert!(
            section.contains(&format!("`{path}`")),
            "docs/run-directory.md's peak.json section lacks `{path}`"
        );
    }
}

/// Every Rust source file of the repository, read.
fn all_rust_sources() -> String {
    fn walk(dir: &std::path::Path, out: &mut String) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut all = String::new();
    walk(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), &mut all);
    all
}

#[test]
fn every_test_docs_security_md_cites_exists() {
    let doc = repo_file("docs/security.md");
    let sources = all_rust_sources();
    let mut cited = 0;
    for quoted in doc.split('`').skip(1).step_by(2) {
        // A test's name, maybe after its file or module (`file.rs::name`).
        let name = quoted.rsplit("::").next().unwrap();
        // (Metric names are `cacheoff_…`.)
        let is_test_name = name.matches('_').count() >= 3
            && !name.starts_with("cacheoff_")
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !is_test_name {
            continue;
        }
        cited += 1;
        assert!(
            sources.contains(&format!("fn {name}(")),
            "docs/security.md cites `{quoted}`, which is no test"
        );
    }
    assert!(cited >= 30, "only {cited} tests cited");
}
