//! docs/multiplier.md against the code: every mismatch and refusal kind
//! with its description, every field of a proxy's summary.

use cacheoff_multiplier::{Mismatch, Refusal};
use cacheoff_rundir::spe::{CollectorSpan, ProxySpan, Summary};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/multiplier.md");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn every_mismatch_kind_is_documented_with_its_description() {
    let doc = doc();
    for k in Mismatch::ALL {
        let row = format!("| `{}` | {} |", k.name(), k.description());
        assert!(doc.contains(&row), "docs/multiplier.md lacks the row {row}");
    }
}

#[test]
fn every_refusal_kind_is_documented_with_its_description() {
    let doc = doc();
    for k in Refusal::ALL {
        let row = format!("| `{}` | {} |", k.name(), k.description());
        assert!(doc.contains(&row), "docs/multiplier.md lacks the row {row}");
    }
}

#[test]
fn every_summary_field_of_a_proxy_is_documented() {
    let doc = doc();
    let s = Summary::derive(
        1.0,
        0,
        0,
        CollectorSpan::default(),
        vec![ProxySpan::default()],
    );
    let v = serde_json::to_value(&s).unwrap();
    for key in v["proxies"][0].as_object().unwrap().keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "docs/multiplier.md lacks `{key}`"
        );
    }
    for key in v.as_object().unwrap().keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "docs/multiplier.md lacks `{key}`"
        );
    }
}
