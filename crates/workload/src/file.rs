//! Workload files: TOML in the vocabulary of [`Workload`],
//! loaded in three layers — raw (as written, unknown keys rejected, defaults
//! filled in), resolved (command-line overrides applied, then scaling
//! rules), validated.
//! Built-in workloads are such files, compiled in from `workloads/`.
//!
//! Every error names the file, line and column, and what was expected.

use crate::dist::with_files;
use crate::files::Files;
use crate::model::Workload;
use crate::overrides::Overrides;
use crate::raw::RawWorkload;
use std::path::{Path, PathBuf};

/// The built-in workloads: name and file text.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("simple", include_str!("../../../workloads/simple.toml")),
    (
        "datacomm-1",
        include_str!("../../../workloads/datacomm-1.toml"),
    ),
    ("downtime", include_str!("../../../workloads/downtime.toml")),
    (
        "polymix-3",
        include_str!("../../../workloads/polymix-3.toml"),
    ),
    (
        "polymix-4",
        include_str!("../../../workloads/polymix-4.toml"),
    ),
    ("polyfill", include_str!("../../../workloads/polyfill.toml")),
    ("webaxe-4", include_str!("../../../workloads/webaxe-4.toml")),
];

/// Names of the built-in workloads.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_FILES.iter().map(|(n, _)| *n)
}

/// A workload that could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("unknown workload {name:?}: not a built-in ({builtins}) and no such file")]
    Unknown { name: String, builtins: String },
    #[error("cannot read {path}: {why}")]
    Read { path: String, why: String },
    /// A problem at a place in the file (or with a command-line setting,
    /// when `line` is 0).
    #[error("{}", place(.file, *.line, *.column, .message))]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
}

fn place(file: &str, line: usize, column: usize, message: &str) -> String {
    if line == 0 {
        format!("{file}: {message}")
    } else {
        format!("{file}:{line}:{column}: {message}")
    }
}

/// Loads a built-in workload by name, or a workload file by path, and
/// applies the overrides; its table files are read from its directory.
pub fn load(spec: &str, o: &Overrides) -> Result<Workload, LoadError> {
    load_with(spec, o, &[])
}

/// [`load`], with table files also read from the `--include` places
/// (directories or files; [`Files`]).
pub fn load_with(spec: &str, o: &Overrides, include: &[PathBuf]) -> Result<Workload, LoadError> {
    if let Some((name, text)) = BUILTIN_FILES.iter().find(|(n, _)| *n == spec) {
        return load_text(&format!("workloads/{name}.toml"), text, o);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(LoadError::Unknown {
            name: spec.into(),
            builtins: builtin_names().collect::<Vec<_>>().join(", "),
        });
    }
    let read = |e: crate::files::FileError| LoadError::Read {
        path: spec.into(),
        why: e.to_string(),
    };
    let files = Files::new(path, include).map_err(read)?;
    let text = files.read_main(path).map_err(read)?;
    parse(spec, &text, o, files)
}

/// Parses, resolves and validates workload text; `file` names it in
/// errors, and its directory holds its table files.
pub fn load_text(file: &str, text: &str, o: &Overrides) -> Result<Workload, LoadError> {
    let files = Files::new(Path::new(file), &[]).unwrap_or_default();
    files.charge(text.len());
    parse(file, text, o, files)
}

fn parse(file: &str, text: &str, o: &Overrides, files: Files) -> Result<Workload, LoadError> {
    let invalid = |(line, column): (usize, usize), message: String| LoadError::Invalid {
        file: file.into(),
        line,
        column,
        message,
    };
    let dir = Path::new(file).parent().map(Path::to_path_buf);
    let mut raw: RawWorkload = with_files(files, dir, || toml::from_str(text)).map_err(|e| {
        let at = e.span().map_or((0, 0), |s| line_col(text, s.start));
        invalid(at, e.message().trim().to_string())
    })?;
    o.apply(&mut raw);
    // The same checks, whether a value came from the file or the command
    // line (which has no place in the file: line 0).
    let placed = |e: crate::WorkloadError| {
        let at = match o.flag_of(e.param) {
            Some(_) => (0, 0),
            None => locate(text, e.param).unwrap_or((0, 0)),
        };
        let from = o
            .flag_of(e.param)
            .map_or(String::new(), |f| format!(" (--{f})"));
        invalid(at, format!("{} = {}{from}: {}", e.param, e.value, e.why))
    };
    raw.check().map_err(placed)?;
    let w = raw.resolve();
    w.validate().map_err(placed)?;
    Ok(w)
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Where a dotted parameter (`popularity.recurrence`, `phases.duration`)
/// is written in the file, if it is.
fn locate(text: &str, param: &str) -> Option<(usize, usize)> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut span = None;
    for key in param.split('.') {
        item = match item {
            toml_edit::Item::ArrayOfTables(a) => {
                // The first table of the array that has the key.
                let t = a.iter().find(|t| t.contains_key(key))?;
                t.get(key)?
            }
            other => other.get(key)?,
        };
        span = item.span().or(span);
    }
    span.map(|s| line_col(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arrivals;
    use cacheoff_base::Bytes;

    #[test]
    fn builtins_load_and_defaults_fill_in() {
        let w = load("simple", &Overrides::default()).unwrap();
        assert_eq!(w.robots.count, 1000);
        assert_eq!(w.servers.count, 600);
        assert!((w.offered_dhr() - 0.55).abs() < 1e-9);
        assert_eq!(w.phases.len(), 2);
        assert!(w.phases[1].measured);
    }

    #[test]
    fn syntax_and_unknown_keys_are_reported_with_line_and_column() {
        let e = load_text(
            "w.toml",
            "name = \"x\"\n[robots]\ncount = 3\nspeed = 9\n",
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("w.toml:4:1: "), "{e}");
        assert!(e.contains("speed") && e.contains("max_conns"), "{e}");

        let e = load_text(
            "w.toml",
            "[[content]]\nname = \"a\"\nshare = 1.0\ncachable = 1.0\nsize = \"exp(13QB)\"\n",
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("w.toml:5:8: "), "{e}");
        assert!(e.contains("13QB"), "{e}");

        let e = load_text("w.toml", "name = \n", &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("w.toml:1:"), "{e}");
    }

    #[test]
    fn invalid_values_point_at_their_place() {
        let text = "name = \"x\"\n\n[popularity]\nrecurrence = 1.5\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
        let e = load_text("w.toml", text, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("w.toml:4:14: popularity.recurrence = 1.5"),
            "{e}"
        );

        // A setting from the command line has no place in the file.
        let o = Overrides {
            robots: Some(0),
            ..Default::default()
        };
        let e = load("simple", &o).unwrap_err().to_string();
        assert!(
            e.starts_with("workloads/simple.toml: robots.count = 0"),
            "{e}"
        );
    }

    #[test]
    fn every_builtin_loads_and_matches_its_file() {
        let o = Overrides {
            cache_size: Some(Bytes::from_gb(1)),
            ..Default::default()
        };
        for name in builtin_names() {
            let w = load(name, &o).unwrap();
            assert_eq!(w.name, name);
            let path = format!("{}/../../workloads/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            let from_file = load(&path, &o).unwrap();
            assert_eq!(w, from_file, "{name}");
        }
        let p = load("polymix-3", &o).unwrap();
        assert!(
            (p.offered_dhr() - 0.58).abs() < 0.005,
            "{}",
            p.offered_dhr()
        );
        assert_eq!(p.robots.count, 1000);
        assert_eq!(p.servers.count, 600);
        // peak x 0.45 x 75% x 4 h objects.
        assert_eq!(p.popularity.working_set_cap, Some(1_944_000));
        assert!(p.phases.iter().any(|ph| ph.goal.is_some()));
        let e = load("polymix-3", &Overrides::default())
            .unwrap()
            .check_runnable()
            .unwrap_err()
            .to_string();
        assert!(e.contains("--cache-size"), "{e}");
        let p4 = load("polymix-4", &o).unwrap();
        assert_eq!(p4.robots.count, 1250);
        assert!((p4.requests.shares().iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((p4.offered_dhr() - 0.55 / 0.8 * 0.8 * 1.0).abs() < 0.02);
        let f = load("polyfill", &o).unwrap();
        assert!(
            (f.offered_dhr() - 0.05).abs() < 0.005,
            "{}",
            f.offered_dhr()
        );
        let x = load("webaxe-4", &o).unwrap();
        assert!(x.surrogate && !p4.surrogate);
        assert_eq!((x.robots.count, x.robots.hosts()), (1250, 1));
        // One origin server per 500 req/s; the WAN on the client side.
        assert_eq!(x.servers.count, 1);
        assert_eq!(
            x.robots.link.map(|l| l.delay.to_string()),
            Some("40ms".into())
        );
        assert_eq!(x.servers.link, None);
        // 1 GB ÷ 11 KB objects.
        assert_eq!(x.popularity.working_set_cap, Some(95_325));
        assert_eq!(x.requests.shares(), p4.requests.shares());
        assert_eq!(x.phases.len(), p4.phases.len());
        // 95% x the cachable share of requests (about 80%).
        assert!(
            (x.offered_dhr() - 0.76).abs() < 0.005,
            "{}",
            x.offered_dhr()
        );
        let d = load("datacomm-1", &Overrides::default()).unwrap();
        assert!((d.offered_dhr() - 0.55).abs() < 1e-9);
        let total: f64 = d.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
        assert_eq!(total, 4.0 * 3600.0 + 60.0);
        let t = load("downtime", &Overrides::default()).unwrap();
        assert!(t.phases.iter().any(|p| p.dark));
        assert_eq!(t.robots.arrivals, Arrivals::Constant);
    }

    #[test]
    fn the_manifest_keeps_every_value_exactly() {
        // Found by fuzz/workload_file: "400/min" came back as 6.666667/s.
        let text =
            "peak_rate = \"400/min\"\n[[phases]]\nname = \"a\"\nduration = \"1.23456789s\"\n";
        let w = load_text("w.toml", text, &Overrides::default()).unwrap();
        let json = serde_json::to_string(&w).unwrap();
        let back: Workload = serde_json::from_str(&json).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn phase_factors_must_be_shares() {
        // Found by fuzz/workload_file: a load factor of 8.9e60 was accepted.
        let phase = |key: &str| format!("[[phases]]\nname = \"a\"\nduration = \"1s\"\n{key}\n");
        for (key, why) in [
            ("load_begin = 8.9e60", "shares of the peak rate"),
            ("load_end = -0.5", "shares of the peak rate"),
            ("population_end = 1.5", "shares of the robots"),
            ("recurrence_begin = 2.0", "stay a probability"),
            ("recurrence_end = nan", "stay a probability"),
            ("special_begin = -1", "must not be negative"),
        ] {
            let e = load_text("w.toml", &phase(key), &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("w.toml:4:") && e.contains(why), "{key}: {e}");
        }
        // IMS and reloads may grow until they crowd out basic requests.
        let mix = "[requests]\nbasic = 0.6\nims200 = 0.2\npost = 0.2\n";
        let text = |k: f64| format!("{mix}{}", phase(&format!("special_begin = {k}")));
        assert!(load_text("w.toml", &text(4.0), &Overrides::default()).is_ok());
        assert!(load_text("w.toml", &text(4.1), &Overrides::default()).is_err());
    }

    #[test]
    fn content_may_name_a_set() {
        let text =
            "name = \"x\"\ncontent = \"polymix\"\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
        let w = load_text("w.toml", text, &Overrides::default()).unwrap();
        let names: Vec<&str> = w.content.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["image", "html", "download", "other"]);
        // PolyMix-3: 55% / (80% x 95%) recurrence offers about 58%.
        let mut w = w;
        w.popularity.recurrence = 0.55 / (0.8 * 0.95);
        assert!((w.offered_dhr() - 0.58).abs() < 0.01, "{}", w.offered_dhr());
        let e = load_text("w.toml", "content = \"nope\"\n", &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("w.toml:1:11: unknown content set \"nope\""),
            "{e}"
        );
    }

    #[test]
    fn unknown_names_list_the_builtins() {
        let e = load("nope", &Overrides::default()).unwrap_err().to_string();
        assert!(e.contains("\"nope\"") && e.contains("simple"), "{e}");
    }

    #[test]
    fn table_files_sit_beside_the_workload_file() {
        let tmp = tempfile::tempdir().unwrap();
        let wl = tmp.path().join("w.toml");
        let text = "name = \"x\"\n[[content]]\nname = \"a\"\nshare = 1.0\ncachable = 1.0\nsize = \"table(sizes.txt)\"\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
        std::fs::write(&wl, text).unwrap();
        std::fs::write(tmp.path().join("sizes.txt"), "1KB 3\n8KB..16KB 1\n").unwrap();
        let w = load(wl.to_str().unwrap(), &Overrides::default()).unwrap();
        assert_eq!(w.content[0].size.to_string(), "table(1KB 3, 8KB..16KB 1)");

        std::fs::write(tmp.path().join("sizes.txt"), "1KB 3\n8KB..1KB 1\n").unwrap();
        let e = load(wl.to_str().unwrap(), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("w.toml:6:8: "), "{e}");
        assert!(
            e.contains("sizes.txt:2: range 8KB..1KB ends below its start"),
            "{e}"
        );
    }
}
