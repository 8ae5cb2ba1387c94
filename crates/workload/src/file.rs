//! Workload files: TOML in the vocabulary of [`Workload`], loaded in three
//! layers — raw (as written, unknown keys rejected, defaults filled in),
//! resolved (scaling rules and command-line overrides applied), validated.
//! Built-in workloads are such files, compiled in from `workloads/`.
//!
//! Every error names the file, line and column, and what was expected.

use crate::content::ContentType;
use crate::dist::{deserialize_dist, with_table_dir, Dist, Quantity};
use crate::lifecycle::LifeCycle;
use crate::model::{
    default_max_head, Aborts, Arrivals, LinkConfig, Overrides, PopModel, Popularity, RequestMix,
    RobotConfig, ServerConfig, Timeouts, Workload,
};
use crate::schedule::Phase;
use cacheoff_base::{Bytes, Dur, Rate};
use serde::{de, Deserialize, Deserializer};
use std::net::Ipv4Addr;
use std::path::Path;

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

/// A rate, or `max` for closed-loop load.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PeakRate(Option<Rate>);

impl<'de> Deserialize<'de> for PeakRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim().eq_ignore_ascii_case("max") {
            return Ok(PeakRate(None));
        }
        s.parse::<Rate>()
            .map(|r| PeakRate(Some(r)))
            .map_err(de::Error::custom)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawRobots {
    /// Fixed robot count; otherwise peak rate ÷ `rate`, at most `max_count`.
    count: Option<u32>,
    rate: Rate,
    max_count: u32,
    per_host: Option<u32>,
    first_ip: Ipv4Addr,
    max_conns: u32,
    #[serde(deserialize_with = "count_dist")]
    conn_reuse: Dist,
    backlog: u32,
    max_head: Bytes,
    arrivals: Arrivals,
    http10: bool,
}

impl Default for RawRobots {
    fn default() -> Self {
        RawRobots {
            count: None,
            rate: Rate(0.4),
            max_count: 1000,
            per_host: None,
            first_ip: Ipv4Addr::new(127, 1, 0, 1),
            max_conns: 4,
            conn_reuse: Dist::constant(Quantity::Count, 128.0),
            backlog: 64,
            max_head: default_max_head(),
            arrivals: Arrivals::Poisson,
            http10: false,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawServers {
    /// Fixed server count; otherwise `per_robot` × robots + `base`.
    count: Option<u32>,
    per_robot: f64,
    base: u32,
    first_ip: Ipv4Addr,
    port: u16,
    #[serde(deserialize_with = "time_dist")]
    think_time: Dist,
    #[serde(deserialize_with = "opt_count_dist")]
    conn_reuse: Option<Dist>,
    idle_timeout: Dur,
    link: Option<LinkConfig>,
}

impl Default for RawServers {
    fn default() -> Self {
        RawServers {
            count: None,
            per_robot: 0.1,
            base: 500,
            first_ip: Ipv4Addr::new(127, 2, 0, 1),
            port: 0,
            think_time: Dist::constant(Quantity::Time, 0.0),
            conn_reuse: None,
            idle_timeout: Dur::secs(15.0),
            link: None,
        }
    }
}

fn count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Count)
}
fn time_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Time)
}
fn opt_count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dist>, D::Error> {
    count_dist(d).map(Some)
}

/// A workload file as written, with defaults for what it leaves out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawWorkload {
    name: String,
    description: String,
    seed: u64,
    peak_rate: PeakRate,
    robots: RawRobots,
    servers: RawServers,
    #[serde(deserialize_with = "crate::content::deserialize_content")]
    content: Vec<ContentType>,
    popularity: Popularity,
    requests: RequestMix,
    aborts: Aborts,
    timeouts: Timeouts,
    interval: Dur,
    plateau: Option<Dur>,
    cache_size: Option<Bytes>,
    fill_rate: Option<Rate>,
    phases: Vec<Phase>,
}

impl Default for RawWorkload {
    fn default() -> Self {
        RawWorkload {
            name: "unnamed".into(),
            description: String::new(),
            seed: 1,
            peak_rate: PeakRate(Some(Rate(400.0))),
            robots: RawRobots::default(),
            servers: RawServers::default(),
            content: vec![ContentType::single(
                "object",
                Dist::exp(Quantity::Size, 13.0 * Bytes::KB as f64),
                0.8,
                LifeCycle::static_two_years(),
            )],
            popularity: Popularity::default(),
            requests: RequestMix::basic_only(),
            aborts: Aborts::default(),
            timeouts: Timeouts::default(),
            interval: Dur::secs(5.0),
            plateau: None,
            cache_size: None,
            fill_rate: None,
            phases: Vec::new(),
        }
    }
}

impl Default for Popularity {
    fn default() -> Self {
        Popularity {
            recurrence: 0.55 / 0.8,
            model: PopModel::Uniform,
            working_set_cap: None,
            hot_set: None,
            bhr_discrimination: 0.0,
            working_set_time: None,
        }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Dur::secs(5.0),
            first_byte: Dur::secs(20.0),
            idle: Dur::secs(10.0),
            xact: Dur::secs(30.0),
            drain: Dur::secs(30.0),
            keep_alive: Dur::secs(10.0),
        }
    }
}

/// Loads a built-in workload by name, or a workload file by path, and
/// applies the overrides.
pub fn load(spec: &str, o: &Overrides) -> Result<Workload, LoadError> {
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
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Read {
        path: spec.into(),
        why: e.to_string(),
    })?;
    load_text(spec, &text, o)
}

/// Parses, resolves and validates workload text; `file` names it in errors.
pub fn load_text(file: &str, text: &str, o: &Overrides) -> Result<Workload, LoadError> {
    let dir = Path::new(file).parent();
    let raw: RawWorkload = with_table_dir(dir, || toml::from_str(text)).map_err(|e| {
        let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
        LoadError::Invalid {
            file: file.into(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    let w = resolve(raw, o);
    w.validate().map_err(|e| {
        let (line, column) = locate(text, e.param).unwrap_or((0, 0));
        LoadError::Invalid {
            file: file.into(),
            line,
            column,
            message: format!("{} = {}: {}", e.param, e.value, e.why),
        }
    })?;
    Ok(w)
}

/// Applies scaling rules and overrides to a raw workload.
fn resolve(raw: RawWorkload, o: &Overrides) -> Workload {
    let peak_rate = o.rate.unwrap_or(raw.peak_rate.0);
    let robots = o
        .robots
        .or(raw.robots.count)
        .unwrap_or_else(|| match peak_rate {
            Some(r) if raw.robots.rate.per_sec() > 0.0 => {
                ((r.per_sec() / raw.robots.rate.per_sec()).ceil() as u32)
                    .clamp(1, raw.robots.max_count.max(1))
            }
            _ => 100,
        });
    let servers = o.servers.or(raw.servers.count).unwrap_or_else(|| {
        (raw.servers.per_robot * f64::from(robots)).round() as u32 + raw.servers.base
    });
    let mut w = Workload {
        name: raw.name,
        description: raw.description,
        seed: raw.seed,
        peak_rate,
        robots: RobotConfig {
            count: robots,
            per_host: raw.robots.per_host,
            first_ip: raw.robots.first_ip,
            max_conns: raw.robots.max_conns,
            conn_reuse: raw.robots.conn_reuse,
            backlog: raw.robots.backlog,
            max_head: raw.robots.max_head,
            arrivals: raw.robots.arrivals,
            http10: raw.robots.http10,
        },
        servers: ServerConfig {
            count: servers,
            first_ip: raw.servers.first_ip,
            port: raw.servers.port,
            think_time: raw.servers.think_time,
            conn_reuse: raw.servers.conn_reuse,
            idle_timeout: raw.servers.idle_timeout,
            link: raw.servers.link,
        },
        content: raw.content,
        popularity: raw.popularity,
        requests: raw.requests,
        aborts: raw.aborts,
        phases: raw.phases,
        plateau: raw.plateau,
        cache_size: raw.cache_size,
        fill_rate: raw.fill_rate,
        timeouts: raw.timeouts,
        interval: raw.interval,
    };
    w.apply(o);
    w
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
