//! docs/products.md covers the product file format: every key, every
//! template variable, every built-in product.

use cacheoff_products::{template::VARIABLES, ProductSpec};
use std::path::Path;

fn repo_file(p: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn doc() -> String {
    repo_file("docs/products.md")
}

/// Every key of the format, as docs/products.md names them.
const KEYS: &[&str] = &[
    "name",
    "title",
    "package",
    "binary",
    "version_args",
    "modes",
    "parent_modes",
    "parent_only_modes",
    "caches",
    "requires.path",
    "requires.package",
    "disk_cache",
    "tls",
    "min_disk_mb",
    "user_when_root",
    "price_usd",
    "price_note",
    "notes",
    "dirs",
    "cleanup",
    "diagnostics",
    "file.path",
    "file.template",
    "file.modes",
    "init.name",
    "init.command",
    "init.modes",
    "init.if",
    "process.name",
    "process.command",
    "process.modes",
    "process.after_ready",
    "process.if",
    "ready.forward_request",
    "ready.reverse_request",
    "ready.probe_logged",
    "ready.file",
    "ready.text",
    "stop.signal",
    "stop.grace_secs",
    "log.path",
    "log.delay_secs",
    "log.field",
    "log.separator",
    "log.hits",
];

/// A product file that sets every key of [`KEYS`]: the parser accepts
/// each of them (it refuses unknown ones).
const EVERY_KEY: &str = r#"
name = "x"
title = "X"
package = "x"
binary = "/bin/true"
version_args = ["-v"]
modes = ["reverse"]
parent_modes = ["reverse"]
parent_only_modes = ["forward"]
caches = true
disk_cache = false
tls = false
min_disk_mb = 9
user_when_root = "nobody"
price_usd = 0
price_note = "free"
notes = "none"
dirs = ["tmp"]
cleanup = ["/dev/shm/{{instance}}-*"]
diagnostics = ["x.log"]
[[requires]]
path = "/usr/lib/x/x.so"
package = "x-mod"
[[file]]
path = "x.conf"
template = "{{listen}}"
modes = ["forward"]
[[init]]
name = "x-init"
command = ["{{binary}}", "-z"]
modes = ["forward"]
if = "disk"
[[process]]
name = "x"
command = ["{{binary}}", { if = "disk", args = ["{{disk_dir}}"] }]
modes = ["forward", "reverse"]
after_ready = false
if = "tls"
[ready]
forward_request = "GET /cacheoff-ready HTTP/1.0\r\n\r\n"
reverse_request = "GET /cacheoff-ready HTTP/1.0\r\n\r\n"
probe_logged = true
file = "x.log"
text = "up"
[stop]
signal = "QUIT"
grace_secs = 1
[log]
path = "access.log"
delay_secs = 1
field = 1
separator = "/"
hits = ["HIT"]
"#;

#[test]
fn every_key_is_accepted_and_documented() {
    ProductSpec::parse(EVERY_KEY, "every key").unwrap();
    let d = doc();
    for k in KEYS {
        assert!(
            d.contains(&format!("| `{k}` |")),
            "docs/products.md has no row for `{k}`"
        );
    }
}

/// Key paths in a product file (`log.hits`; `process.command` for each
/// `[[process]]`).
fn key_paths(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in t {
        let p = format!("{prefix}{k}");
        match v {
            toml::Value::Table(sub) => key_paths(sub, &format!("{p}."), out),
            toml::Value::Array(a) if a.iter().all(|x| x.is_table()) && !a.is_empty() => {
                for x in a {
                    key_paths(x.as_table().unwrap(), &format!("{p}."), out);
                }
            }
            _ => out.push(p),
        }
    }
}

#[test]
fn the_builtin_products_use_only_documented_keys() {
    let mut listed = Vec::new();
    key_paths(&EVERY_KEY.parse().unwrap(), "", &mut listed);
    listed.sort();
    let mut keys: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert_eq!(listed, keys, "EVERY_KEY and KEYS disagree");
    for n in ProductSpec::builtin_names() {
        let text = repo_file(&format!("products/{n}.toml"));
        let mut used = Vec::new();
        key_paths(&text.parse().unwrap(), "", &mut used);
        for k in used {
            assert!(
                KEYS.contains(&k.as_str()),
                "products/{n}.toml: `{k}` is not in KEYS"
            );
        }
    }
}

#[test]
fn every_template_variable_is_documented_with_its_meaning() {
    let d = doc();
    for (name, meaning) in VARIABLES {
        let row = format!("| `{{{{{name}}}}}` | {meaning} |");
        assert!(d.contains(&row), "docs/products.md lacks the row: {row}");
    }
}

#[test]
fn every_builtin_product_has_a_section() {
    let d = doc();
    for n in ProductSpec::builtin_names() {
        assert!(
            d.contains(&format!("\n### {n}\n")),
            "docs/products.md: no section for {n}"
        );
    }
}
