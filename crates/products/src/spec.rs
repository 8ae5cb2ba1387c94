//! Product files: what a product is, how it is configured, started,
//! checked, stopped and how its access log is read (docs/products.md has
//! every key). Loading checks every template, so a product file with an
//! unknown variable or a bad tag is refused before anything starts.

use crate::error::Error;
use crate::template::Template;
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// How the product is placed between robots and origin servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A forward proxy: robots send absolute URIs.
    Forward,
    /// A surrogate (reverse proxy, accelerator): robots send origin-form
    /// requests with `Host: <origin name>` and the product routes by it.
    Reverse,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Forward, Mode::Reverse];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode {s:?}: forward or reverse"))
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One command-line argument: a template, or arguments that are there
/// only when a variable has a value (`{ if = "disk", args = [...] }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Arg {
    Plain(String),
    Cond(CondArg),
}

/// Arguments present only when variable `if` has a value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CondArg {
    #[serde(rename = "if")]
    pub when: String,
    pub args: Vec<String>,
}

/// A file rendered into the run directory before every first start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Relative to the run directory (a template).
    pub path: String,
    pub template: String,
    /// The modes it is written in (default: all).
    pub modes: Option<Vec<Mode>>,
}

/// A command run to completion (`[[init]]`) or a process of the product
/// (`[[process]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Names its output file, `<name>.out` in the run directory (default:
    /// the file name of the command's first word).
    pub name: Option<String>,
    pub command: Vec<Arg>,
    pub modes: Option<Vec<Mode>>,
    /// A `[[process]]` started only once the product answers (by
    /// [`crate::Running::wait_ready`]), e.g. a log writer that must find the
    /// product running.
    #[serde(default)]
    pub after_ready: bool,
    /// Started only when this variable has a value (`tls`: a TLS
    /// terminator in front of the product).
    #[serde(default, rename = "if")]
    pub when: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadySpec {
    /// The probe sent in forward mode (a template): any HTTP reply means
    /// ready.
    #[serde(default = "default_forward_probe")]
    pub forward_request: String,
    /// The probe sent in reverse mode.
    #[serde(default = "default_reverse_probe")]
    pub reverse_request: String,
    /// Ready only once a probe shows in the access log (for products whose
    /// log is written by a separate process that must catch up).
    #[serde(default)]
    pub probe_logged: bool,
    /// With `text`: ready only once this file (relative to the run
    /// directory, a template) got that text since the start, for products
    /// that answer before they can cache.
    pub file: Option<String>,
    pub text: Option<String>,
}

impl Default for ReadySpec {
    fn default() -> Self {
        ReadySpec {
            forward_request: default_forward_probe(),
            reverse_request: default_reverse_probe(),
            probe_logged: false,
            file: None,
            text: None,
        }
    }
}

/// The word in every readiness probe's URL; access log lines that contain
/// it are not counted.
pub const PROBE_MARK: &str = "cacheoff-ready";

fn default_forward_probe() -> String {
    // Origin-form to a forward proxy: it answers 400 itself at once,
    // without asking anyone.
    "GET /cacheoff-ready HTTP/1.0\r\n\r\n".into()
}

fn default_reverse_probe() -> String {
    // A name no address map has: the surrogate answers itself.
    "GET /cacheoff-ready HTTP/1.1\r\nHost: cacheoff-ready.invalid\r\nConnection: close\r\n\r\n"
        .into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopSpec {
    /// The graceful stop signal sent to the process group.
    #[serde(default = "default_signal")]
    pub signal: String,
    /// Seconds to wait after it before SIGKILL.
    #[serde(default = "default_grace")]
    pub grace_secs: f64,
}

impl Default for StopSpec {
    fn default() -> Self {
        StopSpec {
            signal: default_signal(),
            grace_secs: default_grace(),
        }
    }
}

fn default_signal() -> String {
    "TERM".into()
}

fn default_grace() -> f64 {
    10.0
}

/// Signal names a product file may use, and their numbers.
pub const SIGNALS: &[(&str, i32)] = &[
    ("TERM", libc::SIGTERM),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("HUP", libc::SIGHUP),
];

/// How hits are read from the product's access log: each line is split
/// on white space, field `field` (from 0) is cut at `separator` (its first
/// part kept) and compared with `hits`, where a trailing `*` matches any
/// rest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSpec {
    /// Relative to the run directory (a template).
    pub path: String,
    /// How long the product may take to write a line; a graceful stop
    /// waits this long first, for products that lose unwritten lines.
    #[serde(default)]
    pub delay_secs: f64,
    pub field: usize,
    pub separator: Option<String>,
    pub hits: Vec<String>,
}

/// A file the product needs besides its binary (a module it loads), and
/// the Debian package that provides it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// An absolute path.
    pub path: String,
    pub package: Option<String>,
}

/// A product file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductSpec {
    pub name: String,
    pub title: String,
    /// The Debian package that provides the binary (none for ours).
    pub package: Option<String>,
    /// The binary (a template: `{{exe}}` for the reference proxy).
    pub binary: String,
    /// Arguments that make the binary print its version.
    #[serde(default)]
    pub version_args: Vec<String>,
    /// The modes it runs in on its own (what a lineup runs).
    pub modes: Vec<Mode>,
    /// Modes (among `modes`) in which a parent proxy can be given.
    #[serde(default)]
    pub parent_modes: Vec<Mode>,
    /// Modes (not among `modes`) it runs in only with a parent proxy: a
    /// surrogate that is a forward proxy only as the child of the SPE
    /// Collector, sending it every miss.
    #[serde(default)]
    pub parent_only_modes: Vec<Mode>,
    /// Files it needs besides the binary (checked with it).
    #[serde(default)]
    pub requires: Vec<Requirement>,
    /// Whether it caches at all: one that does not (h2o 2.2) is a
    /// baseline whose every reply is a miss, and its `log.hits` is empty.
    #[serde(default = "yes")]
    pub caches: bool,
    /// Whether a disk cache can be configured.
    #[serde(default = "yes")]
    pub disk_cache: bool,
    /// Whether its templates take HTTPS (`{{tls_listen}}`) as well, in
    /// reverse mode, when started with TLS settings.
    #[serde(default)]
    pub tls: bool,
    /// The smallest cache file it runs with, in MiB: a smaller disk cache
    /// is given this size (see [`ProductSpec::disk_size`]).
    pub min_disk_mb: Option<u64>,
    /// The user the product switches to when started as root; the run
    /// directory is then given to that user.
    pub user_when_root: Option<String>,
    pub price_usd: f64,
    pub price_note: String,
    /// How the product is configured, in a few words, for the summary.
    #[serde(default)]
    pub notes: String,
    /// Directories created in the run directory (templates, relative).
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default, rename = "file")]
    pub files: Vec<FileSpec>,
    #[serde(default)]
    pub init: Vec<CommandSpec>,
    #[serde(rename = "process")]
    pub processes: Vec<CommandSpec>,
    /// Files removed before every start and once the product is down
    /// (templates; a `*` in the last component matches any run of characters).
    #[serde(default)]
    pub cleanup: Vec<String>,
    /// The product's own logs (relative to the run directory, templates)
    /// whose tails explain a failed start.
    #[serde(default)]
    pub diagnostics: Vec<String>,
    #[serde(default)]
    pub ready: ReadySpec,
    #[serde(default)]
    pub stop: StopSpec,
    pub log: LogSpec,
}

fn yes() -> bool {
    true
}

/// The product files compiled into the binary.
const BUILTIN: &[(&str, &str)] = &[
    ("squid", include_str!("../../../products/squid.toml")),
    ("varnish", include_str!("../../../products/varnish.toml")),
    ("nginx", include_str!("../../../products/nginx.toml")),
    (
        "trafficserver",
        include_str!("../../../products/trafficserver.toml"),
    ),
    (
        "reference",
        include_str!("../../../products/reference.toml"),
    ),
    ("h2o", include_str!("../../../products/h2o.toml")),
];

pub fn applies(modes: &Option<Vec<Mode>>, mode: Mode) -> bool {
    modes.as_ref().is_none_or(|m| m.contains(&mode))
}

impl ProductSpec {
    /// Names of the built-in products, in the lineup's order.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in product file (products/<name>.toml, compiled in).
    pub fn builtin(name: &str) -> Result<ProductSpec, Error> {
        let (_, text) =
            BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| Error::UnknownProduct {
                    name: name.to_string(),
                    known: Self::builtin_names().join(", "),
                })?;
        Self::parse(text, &format!("built-in product {name}"))
    }

    /// A product file from disk.
    pub fn load(path: &Path) -> Result<ProductSpec, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            product: path.display().to_string(),
            what: "read the product file".into(),
            path: path.to_path_buf(),
            source: e,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a product file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<ProductSpec, Error> {
        let spec: ProductSpec = toml::from_str(text).map_err(|e| Error::Spec {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        spec.check().map_err(|message| Error::Spec {
            origin: origin.to_string(),
            message,
        })?;
        Ok(spec)
    }

    /// Whether the product runs in `mode` on its own, without a parent
    /// proxy (`modes`).
    pub fn supports(&self, mode: Mode) -> bool {
        self.modes.contains(&mode)
    }

    /// Whether the product can run in `mode` with a parent proxy
    /// (`Settings::parent`), as an SPE run's proxies under test do with
    /// the Collector: `parent_modes` and `parent_only_modes`.
    pub fn supports_parent(&self, mode: Mode) -> bool {
        self.parent_modes.contains(&mode) || self.needs_parent(mode)
    }

    /// Whether the product runs in `mode` only with a parent proxy
    /// (`parent_only_modes`).
    pub fn needs_parent(&self, mode: Mode) -> bool {
        self.parent_only_modes.contains(&mode)
    }

    /// The modes in which the product can run with a parent proxy, in
    /// [`Mode::ALL`]'s order: whether (and how) it can join an SPE run.
    pub fn modes_with_parent(&self) -> Vec<Mode> {
        Mode::ALL
            .into_iter()
            .filter(|m| self.supports_parent(*m))
            .collect()
    }

    /// Every mode it can start in, with a parent or without.
    fn all_modes(&self) -> impl Iterator<Item = Mode> + '_ {
        Mode::ALL
            .into_iter()
            .filter(|m| self.supports(*m) || self.needs_parent(*m))
    }

    /// The size a disk cache (or a cache file of the memory size) of
    /// `requested` bytes gets: at least `min_disk_mb`.
    pub fn disk_size(&self, requested: u64) -> u64 {
        requested.max(self.min_disk_mb.unwrap_or(0) << 20)
    }

    /// The stop signal's number.
    pub fn stop_signal(&self) -> i32 {
        SIGNALS
            .iter()
            .find(|(n, _)| *n == self.stop.signal)
            .map_or(libc::SIGTERM, |(_, s)| *s)
    }

    fn check(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            return Err(format!(
                "name {:?}: use lower-case letters, digits and -",
                self.name
            ));
        }
        if self.modes.is_empty() {
            return Err("modes: at least one of \"forward\", \"reverse\"".into());
        }
        if let Some(m) = self.parent_modes.iter().find(|m| !self.modes.contains(m)) {
            return Err(format!("parent_modes: {m} is not among the modes"));
        }
        if let Some(m) = self
            .parent_only_modes
            .iter()
            .find(|m| self.modes.contains(m))
        {
            return Err(format!(
                "parent_only_modes: {m} is among the modes, which run without a parent (list it in parent_modes)"
            ));
        }
        if !(self.price_usd >= 0.0 && self.price_usd.is_finite()) {
            return Err(format!("price_usd: {} is not a price", self.price_usd));
        }
        if !SIGNALS.iter().any(|(n, _)| *n == self.stop.signal) {
            return Err(format!(
                "stop.signal: {:?} is not one of TERM, INT, QUIT, HUP",
                self.stop.signal
            ));
        }
        if !(self.stop.grace_secs >= 0.0 && self.stop.grace_secs < 3600.0) {
            return Err(format!(
                "stop.grace_secs: {} is out of range",
                self.stop.grace_secs
            ));
        }
        if !(self.log.delay_secs >= 0.0 && self.log.delay_secs < 60.0) {
            return Err(format!(
                "log.delay_secs: {} is out of range",
                self.log.delay_secs
            ));
        }
        if let Some(r) = self.requires.iter().find(|r| !r.path.starts_with('/')) {
            return Err(format!("requires: {:?} is not an absolute path", r.path));
        }
        if self.min_disk_mb.is_some_and(|m| m == 0 || m > 1 << 20) {
            return Err("min_disk_mb: from 1 to 1048576".into());
        }
        if self.ready.file.is_some() != self.ready.text.is_some() {
            return Err("ready.file and ready.text go together".into());
        }
        if self.caches && self.log.hits.is_empty() {
            return Err("log.hits: name at least one result that is a hit".into());
        }
        if !self.caches && !self.log.hits.is_empty() {
            return Err(
                "log.hits: a product that does not cache (caches = false) has no hits".into(),
            );
        }
        for m in self.all_modes() {
            let first = self.processes.iter().find(|p| applies(&p.modes, m));
            match first {
                None => return Err(format!("no [[process]] runs in {m} mode")),
                Some(p) if p.after_ready => {
                    return Err(format!(
                        "the first [[process]] of {m} mode cannot be after_ready"
                    ))
                }
                _ => {}
            }
        }
        if self.init.iter().any(|c| c.after_ready) {
            return Err("after_ready is for [[process]], not [[init]]".into());
        }
        let mut templates: Vec<(String, &str)> = vec![
            ("binary".into(), &self.binary),
            ("log.path".into(), &self.log.path),
            ("ready.forward_request".into(), &self.ready.forward_request),
            ("ready.reverse_request".into(), &self.ready.reverse_request),
        ];
        if let Some(f) = &self.ready.file {
            templates.push(("ready.file".into(), f));
        }
        for a in &self.version_args {
            templates.push(("version_args".into(), a));
        }
        for f in &self.files {
            templates.push((format!("file {}: path", f.path), &f.path));
            templates.push((format!("file {}: template", f.path), &f.template));
        }
        for (what, cmds) in [("init", &self.init), ("process", &self.processes)] {
            for (i, c) in cmds.iter().enumerate() {
                if c.command.is_empty() {
                    return Err(format!("{what} {}: the command is empty", i + 1));
                }
                if let Some(w) = c.when.as_ref().filter(|w| !crate::template::is_variable(w)) {
                    return Err(format!(
                        "{what} {}: unknown variable {{{{{w}}}}} in `if`",
                        i + 1
                    ));
                }
                for a in &c.command {
                    match a {
                        Arg::Plain(s) => templates.push((format!("{what} {}", i + 1), s)),
                        Arg::Cond(CondArg { when, args }) => {
                            if !crate::template::is_variable(when) {
                                return Err(format!(
                                    "{what} {}: unknown variable {{{{{when}}}}} in `if`",
                                    i + 1
                                ));
                            }
                            for s in args {
                                templates.push((format!("{what} {}", i + 1), s));
                            }
                        }
                    }
                }
            }
        }
        for d in &self.dirs {
            templates.push(("dirs".into(), d));
        }
        for c in &self.cleanup {
            templates.push(("cleanup".into(), c));
        }
        for d in &self.diagnostics {
            templates.push(("diagnostics".into(), d));
        }
        for (what, t) in templates {
            Template::parse(t).map_err(|e| format!("{what}: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "x"
title = "X"
binary = "/bin/true"
modes = ["forward"]
price_usd = 0
price_note = "free"
[[process]]
command = ["{{binary}}", "--listen", "{{listen}}", { if = "disk", args = ["--disk", "{{disk_dir}}"] }]
[log]
path = "access.log"
field = 3
hits = ["HIT"]
"#;

    #[test]
    fn every_builtin_product_file_loads() {
        for n in ProductSpec::builtin_names() {
            let s = ProductSpec::builtin(n).unwrap();
            assert_eq!(s.name, n);
        }
        assert!(matches!(
            ProductSpec::builtin("squidd"),
            Err(Error::UnknownProduct { .. })
        ));
    }

    #[test]
    fn a_disk_cache_is_at_least_the_product_s_minimum() {
        let s = ProductSpec::parse(MINIMAL, "t").unwrap();
        assert_eq!(s.disk_size(1 << 20), 1 << 20);
        let s = ProductSpec::parse(
            &MINIMAL.replace("price_usd = 0", "price_usd = 0\nmin_disk_mb = 9"),
            "t",
        )
        .unwrap();
        assert_eq!(s.disk_size(8 << 20), 9 << 20);
        assert_eq!(s.disk_size(64 << 20), 64 << 20);
        let ats = ProductSpec::builtin("trafficserver").unwrap();
        assert_eq!(ats.disk_size(8_000_000), 9 << 20);
    }

    #[test]
    fn a_mode_may_need_a_parent() {
        let s = ProductSpec::parse(
            &MINIMAL.replace(
                "modes = [\"forward\"]",
                "modes = [\"reverse\"]\nparent_only_modes = [\"forward\"]",
            ),
            "t",
        )
        .unwrap();
        assert!(!s.supports(Mode::Forward) && s.supports(Mode::Reverse));
        assert!(s.needs_parent(Mode::Forward) && !s.needs_parent(Mode::Reverse));
        assert!(s.supports_parent(Mode::Forward) && !s.supports_parent(Mode::Reverse));
        assert_eq!(s.modes_with_parent(), [Mode::Forward]);
        let s = ProductSpec::parse(MINIMAL, "t").unwrap();
        assert!(!s.supports_parent(Mode::Forward) && !s.needs_parent(Mode::Forward));
        assert!(s.modes_with_parent().is_empty());
        // A process must run in the mode that needs a parent too.
        let e = ProductSpec::parse(
            &MINIMAL
                .replace(
                    "modes = [\"forward\"]",
                    "modes = [\"forward\"]\nparent_only_modes = [\"reverse\"]",
                )
                .replace("[[process]]", "[[process]]\nmodes = [\"forward\"]"),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no [[process]] runs in reverse mode"), "{e}");
    }

    #[test]
    fn every_builtin_product_that_caches_can_be_a_child_of_the_collector() {
        for n in ProductSpec::builtin_names() {
            let s = ProductSpec::builtin(n).unwrap();
            // A baseline without a cache has nothing to compare in SPE:
            // every reply would be the Collector's.
            let want: &[Mode] = if s.caches { &[Mode::Forward] } else { &[] };
            assert_eq!(s.modes_with_parent(), want, "{n}");
        }
    }

    #[test]
    fn modes_parse_by_name() {
        assert_eq!("reverse".parse::<Mode>(), Ok(Mode::Reverse));
        assert_eq!("forward".parse::<Mode>(), Ok(Mode::Forward));
        assert!("sideways".parse::<Mode>().is_err());
    }

    #[test]
    fn a_minimal_file_loads_with_defaults() {
        let s = ProductSpec::parse(MINIMAL, "t").unwrap();
        assert_eq!(s.stop.signal, "TERM");
        assert_eq!(s.stop_signal(), libc::SIGTERM);
        assert!(s.disk_cache);
        assert!(s.ready.reverse_request.contains(PROBE_MARK));
        assert!(s.ready.forward_request.contains(PROBE_MARK));
    }

    #[test]
    fn an_unknown_variable_is_refused_naming_it_and_where() {
        let bad = MINIMAL.replace("{{listen}}", "{{lsten}}");
        let e = ProductSpec::parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(
            e.contains("x.toml") && e.contains("process 1") && e.contains("{{lsten}}"),
            "{e}"
        );
        let bad = MINIMAL.replace("if = \"disk\"", "if = \"disks\"");
        let e = ProductSpec::parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("{{disks}}"), "{e}");
    }

    #[test]
    fn bad_files_are_refused() {
        for (from, to, says) in [
            ("modes = [\"forward\"]", "modes = []", "modes"),
            (
                "modes = [\"forward\"]",
                "modes = [\"sideways\"]",
                "sideways",
            ),
            ("name = \"x\"", "name = \"X Y\"", "name"),
            ("price_usd = 0", "price_usd = -1", "price_usd"),
            ("field = 3", "field = 3\nfiled = 4", "filed"),
            ("hits = [\"HIT\"]", "hits = []", "log.hits"),
            (
                "price_usd = 0",
                "price_usd = 0\ncaches = false",
                "caches = false",
            ),
            (
                "modes = [\"forward\"]",
                "modes = [\"forward\"]\nparent_modes = [\"reverse\"]",
                "parent_modes",
            ),
            (
                "modes = [\"forward\"]",
                "modes = [\"forward\"]\nparent_only_modes = [\"forward\"]",
                "parent_only_modes",
            ),
            (
                "price_usd = 0",
                "price_usd = 0\nmin_disk_mb = 0",
                "min_disk_mb",
            ),
            (
                "[log]",
                "[[requires]]\npath = \"lib/x.so\"\n[log]",
                "requires",
            ),
        ] {
            let e = ProductSpec::parse(&MINIMAL.replace(from, to), "t")
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{to}: {e}");
        }
    }
}
