//! The map matches the territory: docs/architecture.md and docs/deps.dot
//! against the workspace's Cargo.toml files and sources.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use support::repo_file;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Crate directories under crates/, by short name.
fn crate_dirs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Our crates a manifest's `[dependencies]` table names (short names).
fn path_deps(manifest: &str) -> BTreeSet<String> {
    let doc: toml::Table = manifest.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| {
            t.keys()
                .filter_map(|k| k.strip_prefix("cacheoff-"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_dependency_graph_in_the_docs_is_the_workspace_s() {
    let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    actual.insert("cacheoff".into(), path_deps(&repo_file("Cargo.toml")));
    for c in crate_dirs() {
        actual.insert(
            c.clone(),
            path_deps(&repo_file(format!("crates/{c}/Cargo.toml"))),
        );
    }
    let mut drawn: BTreeMap<String, BTreeSet<String>> = actual
        .keys()
        .map(|k| (k.clone(), BTreeSet::new()))
        .collect();
    for line in repo_file("docs/deps.dot").lines() {
        let Some((from, to)) = line.split_once("->") else {
            continue;
        };
        let name = |s: &str| s.trim().trim_end_matches(';').trim_matches('"').to_string();
        drawn.entry(name(from)).or_default().insert(name(to));
    }
    assert_eq!(drawn, actual, "docs/deps.dot is out of date");
    let svg = repo_file("docs/deps.svg");
    for c in actual.keys() {
        assert!(
            svg.contains(&format!("<title>{c}</title>")),
            "docs/deps.svg lacks {c}: render it again from docs/deps.dot"
        );
    }
    let doc = repo_file("docs/architecture.md");
    for c in crate_dirs() {
        assert!(
            doc.contains(&format!("`crates/{c}`")),
            "docs/architecture.md does not place crates/{c}"
        );
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_library_source_file_is_longer_than_600_lines_before_its_tests() {
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    for c in crate_dirs() {
        rust_files(
            &Path::new(ROOT).join("crates").join(c).join("src"),
            &mut files,
        );
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .count();
            (code > 600).then(|| format!("{} ({code} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "too long: {long:?}");
}

/// Identifiers that start a path `word::` in `code`.
fn path_heads<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = String> + 'a {
    code.match_indices(word).filter_map(move |(i, _)| {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            return None;
        }
        let rest = &code[i + word.len()..];
        Some(
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect(),
        )
    })
}

/// Which modules of crates/agent/src each module uses (`a`, `a::b`):
/// through `crate::a`, `super::b` (a sibling, else the parent) and
/// `b::` for its own submodules. Test modules are left out.
fn agent_module_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(ROOT).join("crates/agent/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let module_of = |f: &Path| -> Vec<String> {
        let rel = f.strip_prefix(&src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
            parts.pop();
        }
        parts
    };
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f).join("::")).collect();
    let mut out = BTreeMap::new();
    for f in &files {
        let parts = module_of(f);
        if parts.is_empty() {
            continue; // lib.rs declares the modules
        }
        let me = parts.join("::");
        let parent = parts[..parts.len() - 1].join("::");
        let text = std::fs::read_to_string(f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let mut uses = BTreeSet::new();
        for n in path_heads(code, "crate::") {
            if modules.contains(&n) {
                uses.insert(n);
            }
        }
        if !parent.is_empty() {
            for n in path_heads(code, "super::") {
                let sibling = format!("{parent}::{n}");
                uses.insert(if modules.contains(&sibling) {
                    sibling
                } else {
                    parent.clone()
                });
            }
        }
        for m in &modules {
            if let Some(child) = m.strip_prefix(&format!("{me}::")) {
                if path_heads(code, &format!("{child}::")).next().is_some() {
                    uses.insert(m.clone());
                }
            }
        }
        uses.remove(&me);
        out.insert(me, uses);
    }
    out
}

#[test]
fn the_run_s_control_flow_has_no_import_cycle() {
    let graph = agent_module_imports();
    assert!(graph["robot"].contains("robot::exchange"), "{graph:?}");
    assert!(graph["coord"].contains("worker"), "{graph:?}");
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("import cycle: {:?} -> {m}", &path[i..]);
        }
        path.push(m.to_string());
        for n in g.get(m).into_iter().flatten() {
            visit(n, g, path, done);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}
