//! The documentation of the run directory covers every field and error kind
//! that cacheoff writes.

use cacheoff_stats::{Accum, ErrorKind};
use cacheoff_workload::RequestType;
use cacheoff_workload::{load, Overrides};
use serde_json::Value;

fn doc() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/run-directory.md"
    ))
    .unwrap()
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
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/proxy.md")).unwrap();
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_cacheoff"))
        .args(["proxy", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout)
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
