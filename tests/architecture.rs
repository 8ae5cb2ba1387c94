//! The map matches the territory: docs/architecture.md and docs/deps.dot
//! against the workspace's Cargo.toml files and sources.

use crate::support;

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

/// A crate's code as the import graph reads it: the part before its
/// tests (`#[cfg(test)] mod`), without comment lines (doc links are no
/// imports).
fn code_of(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let tests_follow = lines
            .peek()
            .is_some_and(|n| n.trim_start().starts_with("mod ") || n.contains(" mod "));
        if t.starts_with("#[cfg(test)]") && (t.contains("mod ") || tests_follow) {
            break;
        }
        if !t.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// The paths a `use` tree (or an expression's path) names from `at`, just
/// after a `prefix::`: `a::b::C` is one, `{a, b::{c, d}}` three.
fn paths_from(code: &[u8], at: usize) -> Vec<Vec<String>> {
    fn skip_ws(s: &[u8], i: &mut usize) {
        while s.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
            *i += 1;
        }
    }
    fn tree(s: &[u8], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) {
        loop {
            skip_ws(s, i);
            if s.get(*i) == Some(&b'{') {
                *i += 1;
                loop {
                    skip_ws(s, i);
                    if matches!(s.get(*i), None | Some(b'}')) {
                        *i += 1;
                        return;
                    }
                    tree(s, i, path.clone(), out);
                    skip_ws(s, i);
                    match s.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            let start = *i;
            while s
                .get(*i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                *i += 1;
            }
            if *i == start {
                if s.get(*i) == Some(&b'*') {
                    *i += 1;
                }
                out.push(path);
                return;
            }
            path.push(String::from_utf8_lossy(&s[start..*i]).into_owned());
            if s[*i..].starts_with(b"::") {
                *i += 2;
                continue;
            }
            out.push(path);
            return;
        }
    }
    let mut out = Vec::new();
    let mut i = at;
    tree(code, &mut i, Vec::new(), &mut out);
    out
}

/// Where `word::` starts a path in `code` (not inside a longer path or
/// name): the index just after it.
fn path_starts<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(word).filter_map(move |(i, _)| {
        let before = code[..i].chars().next_back();
        let inside = before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        (!inside).then_some(i + word.len())
    })
}

/// The module graph of one crate (`src`: the directory of its lib.rs or
/// main.rs), between its top-level modules. A module is a file: `a.rs`
/// and `a/mod.rs` are `a`, `a/b.rs` is `a::b` (the crate root only
/// declares modules and is left out). A file uses the deepest module a
/// path in its code names: `crate::a::b::X`, `super::x` (from the
/// parent's module down; the parent itself when `x` is no module),
/// `self::x`, and `x::...` for its own submodule `x`; grouped imports
/// (`crate::{a, b::{c, d}}`) name each path. Code is what [`code_of`]
/// keeps. A submodule counts as its top-level module: `a/*.rs` and `a.rs`
/// are one unit (a parent may give its children shared helpers through
/// `super::` and call them, as a file's items call each other), and the
/// graph is between units: `a::b` using `c` is `a` using `c`.
fn module_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let module_of = |f: &Path| -> Vec<String> {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            parts.pop();
        }
        parts
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f).join("::"))
        .filter(|m| !m.is_empty())
        .collect();
    // The deepest module `base` followed by `path` names; `base` when none
    // is deeper (an item of `base` itself).
    let resolve = |base: &[String], path: &[String]| -> Option<String> {
        let mut full = base.to_vec();
        let mut found = (!base.is_empty()).then(|| base.join("::"));
        for seg in path {
            full.push(seg.clone());
            let name = full.join("::");
            if modules.contains(&name) {
                found = Some(name);
            }
        }
        found
    };
    let mut out = BTreeMap::new();
    for f in &files {
        let parts = module_of(f);
        if parts.is_empty() {
            continue;
        }
        let me = parts.join("::");
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let bytes = code.as_bytes();
        let mut uses = BTreeSet::new();
        for at in path_starts(&code, "crate::") {
            uses.extend(paths_from(bytes, at).iter().filter_map(|p| resolve(&[], p)));
        }
        for at in path_starts(&code, "super::") {
            let mut base = parts[..parts.len() - 1].to_vec();
            let mut at = at;
            while code[at..].starts_with("super::") {
                base.pop();
                at += "super::".len();
            }
            uses.extend(
                paths_from(bytes, at)
                    .iter()
                    .filter_map(|p| resolve(&base, p)),
            );
        }
        for at in path_starts(&code, "self::") {
            uses.extend(
                paths_from(bytes, at)
                    .iter()
                    .filter_map(|p| resolve(&parts, p)),
            );
        }
        for m in &modules {
            let Some(child) = m.strip_prefix(&format!("{me}::")) else {
                continue;
            };
            if child.contains("::") {
                continue;
            }
            for at in path_starts(&code, &format!("{child}::")) {
                let mut base = parts.clone();
                base.push(child.to_string());
                uses.extend(
                    paths_from(bytes, at)
                        .iter()
                        .filter_map(|p| resolve(&base, p)),
                );
            }
        }
        // A submodule is part of its top-level module's unit.
        let unit = |m: &str| m.split("::").next().unwrap_or(m).to_string();
        let me = unit(&me);
        let entry: &mut BTreeSet<String> = out.entry(me.clone()).or_default();
        entry.extend(uses.iter().map(|m| unit(m)).filter(|u| *u != me));
    }
    out
}

/// The graph's import cycles: its strongly connected components of more
/// than one module (Tarjan), each sorted.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, m: &'a str) {
            let i = self.index.len();
            self.index.insert(m, i);
            self.low.insert(m, i);
            self.stack.push(m);
            self.on_stack.insert(m);
            let g = self.g;
            for n in g.get(m).into_iter().flatten() {
                let n = n.as_str();
                if !self.index.contains_key(n) {
                    self.visit(n);
                    let l = self.low[m].min(self.low[n]);
                    self.low.insert(m, l);
                } else if self.on_stack.contains(n) {
                    let l = self.low[m].min(self.index[n]);
                    self.low.insert(m, l);
                }
            }
            if self.low[m] == self.index[m] {
                let mut scc = Vec::new();
                while let Some(n) = self.stack.pop() {
                    self.on_stack.remove(n);
                    scc.push(n.to_string());
                    if n == m {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.found.push(scc);
                }
            }
        }
    }
    let mut w = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for m in g.keys() {
        if !w.index.contains_key(m.as_str()) {
            w.visit(m);
        }
    }
    w.found.sort();
    w.found
}

/// Every crate's source directory, by the crate's short name (the root
/// package is `cacheoff`).
fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut v = vec![("cacheoff".to_string(), Path::new(ROOT).join("src"))];
    for c in crate_dirs() {
        v.push((
            c.clone(),
            Path::new(ROOT).join("crates").join(&c).join("src"),
        ));
    }
    v
}

#[test]
fn the_import_graph_reads_paths_as_rust_does() {
    let agent = module_imports(&Path::new(ROOT).join("crates/agent/src"));
    // `worker` is used through `crate::worker::`, `robot` by `worker`'s
    // grouped import, `timeline` from `robot::pacer` (part of `robot`).
    assert!(agent["coord"].contains("worker"), "{agent:?}");
    assert!(agent["worker"].contains("robot"), "{agent:?}");
    assert!(agent["robot"].contains("timeline"), "{agent:?}");
    assert!(!agent.contains_key("robot::exchange"), "{agent:?}");
    let paths = |s: &str| paths_from(s.as_bytes(), 0);
    assert_eq!(
        paths("{a::X, b::{self, c::Y}, d};"),
        [
            vec!["a", "X"],
            vec!["b", "self"],
            vec!["b", "c", "Y"],
            vec!["d"]
        ]
    );
    assert_eq!(paths("a::b(x)"), [vec!["a", "b"]]);
    let g = BTreeMap::from(
        [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
            .map(|(m, n)| (m.to_string(), BTreeSet::from([n.to_string()]))),
    );
    assert_eq!(cycles(&g), [vec!["a", "b", "c"]]);
}

#[test]
fn no_crate_has_a_module_import_cycle() {
    // Each cycle with its edges, to say where to cut it.
    let mut found = String::new();
    for (name, src) in crate_sources() {
        let g = module_imports(&src);
        for c in cycles(&g) {
            found.push_str(&format!("\n{name}:"));
            for m in &c {
                let within: Vec<&str> = g[m]
                    .iter()
                    .filter(|n| c.contains(n))
                    .map(String::as_str)
                    .collect();
                found.push_str(&format!("\n    {m} -> {}", within.join(", ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:{found}");
}

/// The integration-test binaries a package builds: each `[[test]]` of its
/// manifest, or, while Cargo discovers them (no `autotests = false`), each
/// file at the top of its `tests/`.
fn test_binaries(package: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap();
    if manifest.contains("autotests = false") {
        let names = manifest.split("[[test]]").skip(1).filter_map(|t| {
            let line = t.lines().find(|l| l.trim_start().starts_with("name"))?;
            Some(line.split('"').nth(1)?.to_string())
        });
        return names.collect();
    }
    let Ok(dir) = std::fs::read_dir(package.join("tests")) else {
        return Vec::new();
    };
    dir.flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn tests_build_one_binary_per_crate_and_a_few_at_the_root() {
    // Each test binary links the whole of what it tests: a file per
    // binary made CI link ~100 of them (docs/testing.md).
    for c in crate_dirs() {
        let bins = test_binaries(&Path::new(ROOT).join("crates").join(&c));
        assert!(bins.len() <= 1, "crates/{c} builds test binaries {bins:?}");
    }
    let root = test_binaries(Path::new(ROOT));
    assert!(
        root.len() <= 6 && root.contains(&"runs".to_string()),
        "the root builds test binaries {root:?}"
    );
}

#[test]
fn every_test_file_is_built_into_a_test_binary() {
    // Without Cargo's discovery a file of tests/ that no binary declares
    // would never be compiled, its tests never run.
    let mut packages = vec![PathBuf::from(ROOT)];
    packages.extend(
        crate_dirs()
            .iter()
            .map(|c| Path::new(ROOT).join("crates").join(c)),
    );
    for p in packages {
        let manifest = std::fs::read_to_string(p.join("Cargo.toml")).unwrap();
        if !manifest.contains("autotests = false") {
            continue;
        }
        let roots: Vec<String> = manifest
            .split("[[test]]")
            .skip(1)
            .filter_map(|t| {
                let line = t.lines().find(|l| l.trim_start().starts_with("path"))?;
                Some(
                    line.split('"')
                        .nth(1)?
                        .trim_start_matches("tests/")
                        .to_string(),
                )
            })
            .collect();
        let mut built: BTreeSet<String> = roots.iter().cloned().collect();
        for r in &roots {
            let text = std::fs::read_to_string(p.join("tests").join(r)).unwrap();
            for l in text.lines() {
                if let Some(m) = l.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                    built.insert(format!("{m}.rs"));
                }
            }
        }
        for e in std::fs::read_dir(p.join("tests")).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".rs") {
                assert!(
                    built.contains(&name),
                    "{}/tests/{name} is in no test binary: declare it `mod` in one of {roots:?}",
                    p.display()
                );
            }
        }
    }
}
