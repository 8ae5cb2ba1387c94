//! Starting a product: checking what it is given, rendering its files
//! into the run directory (with the address map in its own form), giving
//! the directory to the user it switches to, running its `[[init]]`
//! commands and spawning its processes. Also what its binary says it is.

use crate::error::Error;
use crate::process;
use crate::render;
use crate::running::{Launch, Running};
use crate::spec::{applies, Arg, CommandSpec, CondArg, Mode, ProductSpec};
use crate::template::{self, Vars};
use cacheoff_workload::AddrMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A disk cache: its size and directory (relative to the run directory
/// unless absolute; kept across restarts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    pub size: u64,
    pub dir: PathBuf,
}

impl Disk {
    /// A disk cache of `size` bytes in `disk-cache/` of the run directory.
    pub fn in_run_dir(size: u64) -> Disk {
        Disk {
            size,
            dir: PathBuf::from("disk-cache"),
        }
    }
}

/// What one start of a product is given.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    pub listen: SocketAddr,
    /// Memory cache size in bytes.
    pub mem: u64,
    pub disk: Option<Disk>,
    /// The origin servers by name (required in reverse mode).
    pub addrmap: Option<&'a AddrMap>,
    /// A parent proxy (forward mode, where the product supports it).
    pub parent: Option<SocketAddr>,
    /// The product's run directory: configuration, logs, pid files and
    /// caches all go in it; created if missing.
    pub dir: PathBuf,
    /// The cacheoff executable (the reference proxy's binary).
    pub exe: PathBuf,
    /// HTTPS beside plain HTTP (products with `tls = true`, reverse mode).
    pub tls: Option<TlsSettings>,
}

/// Where a product takes HTTPS, and the certificate it presents (the
/// test CA's, `cacheoff_tls::Pki`).
#[derive(Debug, Clone)]
pub struct TlsSettings {
    pub listen: SocketAddr,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What a product's binary says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The first line of its version output that holds a version number.
    pub line: String,
    /// That number (`5.7`, `7.1.1`), if any.
    pub number: Option<String>,
}

fn mib(bytes: u64) -> u64 {
    (bytes >> 20).max(1)
}

/// `co` and 12 hex digits of the run directory's path (FNV-1a).
fn instance_of(dir: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("co{:012x}", h & 0xffff_ffff_ffff)
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

impl ProductSpec {
    /// The binary's path (`{{exe}}` is the only variable it may use).
    pub fn binary_path(&self, exe: &Path) -> Result<PathBuf, Error> {
        let mut v = Vars::new();
        v.insert("exe", path_str(exe));
        template::render(&self.binary, &v)
            .map(PathBuf::from)
            .map_err(|e| self.setup("binary", e.to_string()))
    }

    /// Whether the binary and every file of `requires` are there.
    pub fn is_installed(&self, exe: &Path) -> bool {
        self.installed_binary(exe).is_ok()
    }

    /// Runs the binary with `version_args` and reads its version.
    pub fn version(&self, exe: &Path) -> Result<Version, Error> {
        let bin = self.installed_binary(exe)?;
        let mut v = Vars::new();
        v.insert("exe", path_str(exe));
        v.insert("binary", path_str(&bin));
        let args = self
            .version_args
            .iter()
            .map(|a| template::render(a, &v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.setup("version_args", e.to_string()))?;
        let out = std::process::Command::new(&bin)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| self.io("run it for its version", &bin, e))?;
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(parse_version(&text))
    }

    /// The binary, or the error that names what is missing (the binary or
    /// a file of `requires`) and its package.
    pub fn installed_binary(&self, exe: &Path) -> Result<PathBuf, Error> {
        let bin = self.binary_path(exe)?;
        if !bin.is_file() {
            return Err(Error::NotInstalled {
                product: self.name.clone(),
                binary: bin,
                package: self.package.clone(),
            });
        }
        if let Some(r) = self.requires.iter().find(|r| !Path::new(&r.path).is_file()) {
            return Err(Error::NotInstalled {
                product: self.name.clone(),
                binary: PathBuf::from(&r.path),
                package: r.package.clone(),
            });
        }
        Ok(bin)
    }

    fn setup(&self, what: &str, message: String) -> Error {
        Error::Setup {
            product: self.name.clone(),
            what: what.to_string(),
            message,
        }
    }

    fn io(&self, what: &str, path: &Path, e: std::io::Error) -> Error {
        Error::Io {
            product: self.name.clone(),
            what: what.to_string(),
            path: path.to_path_buf(),
            source: e,
        }
    }

    /// Whether the product can start in `mode` with `settings`, as far as
    /// its product file says (the mode, a parent proxy, a disk cache, the
    /// address map, the port), without touching anything: what
    /// [`ProductSpec::start`] checks first.
    pub fn check_settings(&self, mode: Mode, settings: &Settings) -> Result<(), Error> {
        let unsupported = |why: &str| Error::Unsupported {
            product: self.name.clone(),
            mode,
            why: why.to_string(),
        };
        if !self.supports(mode) && !self.needs_parent(mode) {
            return Err(unsupported("the product file does not list this mode"));
        }
        match settings.parent {
            None if self.needs_parent(mode) => {
                return Err(unsupported(
                    "only with a parent proxy, such as the SPE Collector, which gets every miss",
                ))
            }
            Some(_) if !self.supports_parent(mode) => {
                return Err(unsupported("no parent proxy in this mode"))
            }
            _ => {}
        }
        if settings.disk.is_some() && !self.disk_cache {
            return Err(unsupported("no disk cache"));
        }
        if settings.tls.is_some() && !(self.tls && mode == Mode::Reverse) {
            return Err(unsupported(
                "no HTTPS (its product file has no `tls = true`, or not in this mode)",
            ));
        }
        if mode == Mode::Reverse && settings.addrmap.is_none() {
            return Err(unsupported("reverse mode needs the origin address map"));
        }
        if settings.listen.port() == 0 {
            return Err(self.setup(
                "listen",
                "a port is needed (0 picks none we could reach)".into(),
            ));
        }
        Ok(())
    }

    /// Writes the product's files into `settings.dir`, runs its `[[init]]`
    /// commands and starts its processes in a new process group. It is
    /// not ready yet: see [`Running::wait_ready`].
    pub fn start(&self, mode: Mode, settings: &Settings) -> Result<Running, Error> {
        self.check_settings(mode, settings)?;
        let bin = self.installed_binary(&settings.exe)?;
        std::fs::create_dir_all(&settings.dir)
            .map_err(|e| self.io("create the run directory", &settings.dir, e))?;
        let dir = settings
            .dir
            .canonicalize()
            .map_err(|e| self.io("resolve the run directory", &settings.dir, e))?;
        let disk_dir = match &settings.disk {
            Some(d) => {
                let p = dir.join(&d.dir);
                std::fs::create_dir_all(&p)
                    .map_err(|e| self.io("create the disk cache directory", &p, e))?;
                Some(p.canonicalize().map_err(|e| self.io("resolve", &p, e))?)
            }
            None => None,
        };
        let root_user = self.user_when_root.as_ref().filter(|_| process::is_root());
        let user = root_user.cloned().unwrap_or_else(process::current_user);
        let instance = instance_of(&dir);

        let mut v = Vars::new();
        v.insert("binary", path_str(&bin));
        v.insert("exe", path_str(&settings.exe));
        v.insert("dir", path_str(&dir));
        v.insert("instance", instance.clone());
        v.insert("user", user.clone());
        v.insert("nofile", process::hard_nofile().to_string());
        v.insert("listen", settings.listen.to_string());
        v.insert("listen_host", settings.listen.ip().to_string());
        v.insert("listen_port", settings.listen.port().to_string());
        v.insert("mem_bytes", settings.mem.to_string());
        v.insert("mem_mb", mib(settings.mem).to_string());
        v.insert("mem_file_mb", mib(self.disk_size(settings.mem)).to_string());
        if let (Some(d), Some(p)) = (&settings.disk, &disk_dir) {
            let size = self.disk_size(d.size);
            v.insert("disk", "1".into());
            v.insert("disk_dir", path_str(p));
            v.insert("disk_bytes", size.to_string());
            v.insert("disk_mb", mib(size).to_string());
        }
        if let Some(p) = settings.parent {
            v.insert("parent", p.to_string());
            v.insert("parent_host", p.ip().to_string());
            v.insert("parent_port", p.port().to_string());
        }
        v.insert(mode.name(), "1".into());
        if let Some(t) = &settings.tls {
            // Copies in the run directory, which the product's user owns.
            let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| self.io("read", p, e));
            let (cert, key) = (read(&t.cert)?, read(&t.key)?);
            let write = |name: &str, text: &str| {
                let p = dir.join(name);
                std::fs::write(&p, text).map_err(|e| self.io("write", &p, e))?;
                Ok::<_, Error>(path_str(&p))
            };
            v.insert("tls", "1".into());
            v.insert("tls_listen", t.listen.to_string());
            v.insert("tls_listen_host", t.listen.ip().to_string());
            v.insert("tls_listen_port", t.listen.port().to_string());
            v.insert("tls_cert", write("tls-cert.pem", &cert)?);
            v.insert("tls_key", write("tls-key.pem", &key)?);
            v.insert("tls_pem", write("tls.pem", &(key + &cert))?);
        }
        if let Some(map) = settings.addrmap {
            render::check_names(map).map_err(|m| self.setup("address map", m))?;
            v.insert("origin_map", map.to_text());
            v.insert("squid_origins", render::squid_origins(map));
            v.insert("varnish_backends", render::varnish_backends(map));
            v.insert("varnish_routing", render::varnish_routing(map));
            v.insert("nginx_origin_map", render::nginx_origin_map(map));
            v.insert("nginx_upstreams", render::nginx_upstreams(map));
            v.insert("ats_remap", render::ats_remap(map));
            v.insert("h2o_hosts", render::h2o_hosts(map));
        }
        let r = |what: &str, t: &str| {
            template::render(t, &v).map_err(|e| self.setup(what, e.to_string()))
        };

        for d in &self.dirs {
            let p = dir.join(r("dirs", d)?);
            std::fs::create_dir_all(&p).map_err(|e| self.io("create", &p, e))?;
        }
        for f in self.files.iter().filter(|f| applies(&f.modes, mode)) {
            let p = dir.join(r("file path", &f.path)?);
            let text = r(&format!("file {}", f.path), &f.template)?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|e| self.io("create", parent, e))?;
            }
            std::fs::write(&p, text).map_err(|e| self.io("write", &p, e))?;
        }
        if let Some(u) = root_user {
            self.give_to(u, &dir, disk_dir.as_deref())?;
        }
        let commands = |list: &[CommandSpec], what: &str| -> Result<Vec<Launch>, Error> {
            let mut out = Vec::new();
            let wanted = |c: &&CommandSpec| {
                applies(&c.modes, mode)
                    && c.when
                        .as_ref()
                        .is_none_or(|w| v.get(w.as_str()).is_some_and(|x| !x.is_empty()))
            };
            for c in list.iter().filter(wanted) {
                let mut argv = Vec::new();
                for a in &c.command {
                    match a {
                        Arg::Plain(s) => argv.push(r(what, s)?),
                        Arg::Cond(CondArg { when, args }) => {
                            if v.get(when.as_str()).is_some_and(|x| !x.is_empty()) {
                                for s in args {
                                    argv.push(r(what, s)?);
                                }
                            }
                        }
                    }
                }
                let name = match &c.name {
                    Some(n) => n.clone(),
                    None => Path::new(&argv[0])
                        .file_name()
                        .map_or("process".into(), |n| n.to_string_lossy().into_owned()),
                };
                out.push(Launch {
                    name,
                    argv,
                    after_ready: c.after_ready,
                });
            }
            Ok(out)
        };
        let inits = commands(&self.init, "init")?;
        let launches = commands(&self.processes, "process")?;
        let probe = match mode {
            Mode::Forward => r("ready.forward_request", &self.ready.forward_request)?,
            Mode::Reverse => r("ready.reverse_request", &self.ready.reverse_request)?,
        };
        let mut running = Running {
            product: self.name.clone(),
            mode,
            listen: settings.listen,
            launches,
            cleanup: self
                .cleanup
                .iter()
                .map(|c| r("cleanup", c))
                .collect::<Result<_, _>>()?,
            diagnostics: self
                .diagnostics
                .iter()
                .map(|d| r("diagnostics", d).map(|p| dir.join(p)))
                .collect::<Result<_, _>>()?,
            probe,
            probe_logged: self.ready.probe_logged,
            log_mark: 0,
            ready_text: match (&self.ready.file, &self.ready.text) {
                (Some(f), Some(t)) => Some((dir.join(r("ready.file", f)?), t.clone())),
                _ => None,
            },
            ready_mark: 0,
            pending: false,
            stop_signal: self.stop_signal(),
            grace: Duration::from_secs_f64(self.stop.grace_secs),
            log_path: dir.join(r("log.path", &self.log.path)?),
            log: self.log.clone(),
            tag: format!("{instance}-{}", std::process::id()),
            children: Vec::new(),
            pgid: None,
            cgroup: match cacheoff_resources::Cgroup::create(&self.name) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("cacheoff: {}: {e}", self.name);
                    None
                }
            },
            dir,
        };
        running.remove_stale()?;
        for i in &inits {
            running.run_init(i)?;
        }
        running.spawn_all()?;
        Ok(running)
    }

    /// Gives the run directory (and the disk cache's) to user `u`, which
    /// the product switches to when started as root.
    fn give_to(&self, u: &str, dir: &Path, disk: Option<&Path>) -> Result<(), Error> {
        let (uid, gid) = process::lookup_user(u).ok_or_else(|| {
            self.setup("user_when_root", format!("no user {u:?} on this machine"))
        })?;
        for d in std::iter::once(dir).chain(disk) {
            if let Some((closed, mode)) = process::closed_ancestor(d) {
                return Err(self.setup(
                    "run directory",
                    format!(
                        "started as root it runs as {u}, which cannot reach {}: {} is mode {mode:o} (make it searchable, e.g. chmod o+x, or use another directory)",
                        d.display(),
                        closed.display()
                    ),
                ));
            }
            process::chown_tree(d, uid, gid).map_err(|e| self.io("give to its user", d, e))?;
        }
        Ok(())
    }
}

/// The first line that holds a version number, and the number.
pub fn parse_version(text: &str) -> Version {
    for line in text.lines() {
        let mut run = String::new();
        for c in line.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_digit() || (c == '.' && !run.is_empty()) {
                run.push(c);
                continue;
            }
            let n = run.trim_end_matches('.');
            if n.contains('.') {
                return Version {
                    line: line.trim().to_string(),
                    number: Some(n.to_string()),
                };
            }
            run.clear();
        }
    }
    Version {
        line: text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string(),
        number: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_each_product_s_output() {
        for (out, number) in [
            ("Squid Cache: Version 5.7\nService Name: squid\n", "5.7"),
            (
                "\nvarnishd (varnish-7.1.1 revision 7cee1c581bead20e88d101ab3d72afb29f14d87a)\nCopyright (c) 2006 Verdens Gang AS\n",
                "7.1.1",
            ),
            ("\nnginx version: nginx/1.22.1\n", "1.22.1"),
            ("Traffic Server 9.2.9 Apr  4 2026 14:52:39 localhost\ntraffic_server: using root directory '/usr'\n", "9.2.9"),
            ("cacheoff 0.1.0\n", "0.1.0"),
        ] {
            assert_eq!(parse_version(out).number.as_deref(), Some(number), "{out}");
        }
        let v = parse_version("\nno number here\n");
        assert_eq!(
            v,
            Version {
                line: "no number here".into(),
                number: None
            }
        );
    }

    #[test]
    fn instances_are_alphanumeric_and_differ_by_directory() {
        let a = instance_of(Path::new("/tmp/a"));
        assert_eq!(a.len(), 14);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(a, instance_of(Path::new("/tmp/b")));
        assert_eq!(a, instance_of(Path::new("/tmp/a")));
    }

    #[test]
    fn a_parent_is_checked_against_the_product_file() {
        let settings = Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 3128)),
            mem: 1 << 20,
            disk: None,
            addrmap: None,
            parent: None,
            dir: PathBuf::from("/nonexistent"),
            exe: PathBuf::from("/nonexistent/cacheoff"),
            tls: None,
        };
        let with_parent = Settings {
            parent: Some(SocketAddr::from(([127, 0, 0, 1], 3129))),
            ..settings.clone()
        };
        let map = AddrMap::for_servers(&[SocketAddr::from(([127, 0, 0, 1], 8080))]);
        let reverse_with_parent = Settings {
            addrmap: Some(&map),
            ..with_parent.clone()
        };
        for name in ProductSpec::builtin_names() {
            let spec = ProductSpec::builtin(name).unwrap();
            if !spec.caches {
                continue;
            }
            spec.check_settings(Mode::Forward, &with_parent)
                .unwrap_or_else(|e| panic!("{e}"));
            let e = spec
                .check_settings(Mode::Reverse, &reverse_with_parent)
                .unwrap_err()
                .to_string();
            assert!(e.contains("no parent proxy in this mode"), "{e}");
            let alone = spec.check_settings(Mode::Forward, &settings);
            if spec.needs_parent(Mode::Forward) {
                let e = alone.unwrap_err().to_string();
                assert_eq!(
                    e,
                    format!("{name}: cannot run in forward mode (only with a parent proxy, such as the SPE Collector, which gets every miss)")
                );
            } else {
                alone.unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let varnish = ProductSpec::builtin("varnish").unwrap();
        assert!(varnish.needs_parent(Mode::Forward));
        assert!(!ProductSpec::builtin("squid")
            .unwrap()
            .needs_parent(Mode::Forward));
    }

    #[test]
    fn sizes_in_mib_are_at_least_one() {
        assert_eq!(mib(0), 1);
        assert_eq!(mib(64 << 20), 64);
        assert_eq!(mib((64 << 20) + 5), 64);
    }
}
