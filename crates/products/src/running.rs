//! A started product: its rendered configuration and command lines, its
//! process group, and the five things done to it (wait until it answers,
//! power cut, restart, stop, read its log).

use crate::error::Error;
use crate::log::{self, LogCounts};
use crate::process::{self, members};
use crate::render;
use crate::spec::{applies, Arg, CommandSpec, CondArg, LogSpec, Mode, ProductSpec};
use crate::template::{self, Vars};
use cacheoff_workload::AddrMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

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
}

/// What a product's binary says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The first line of its version output that holds a version number.
    pub line: String,
    /// That number (`5.7`, `7.1.1`), if any.
    pub number: Option<String>,
}

/// How long an `[[init]]` command may take.
const INIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long killed processes may take to be gone.
const KILL_WAIT: Duration = Duration::from_secs(10);

struct Launch {
    name: String,
    argv: Vec<String>,
    after_ready: bool,
}

/// A started product. Dropping it kills every process of it at once.
pub struct Running {
    product: String,
    mode: Mode,
    dir: PathBuf,
    listen: SocketAddr,
    launches: Vec<Launch>,
    cleanup: Vec<String>,
    diagnostics: Vec<PathBuf>,
    probe: String,
    /// Ready only once a probe shows in the access log.
    probe_logged: bool,
    /// The access log's length when the after-ready processes started.
    log_mark: u64,
    /// The after-ready processes of this start are still to be spawned.
    pending: bool,
    stop_signal: i32,
    grace: Duration,
    log_path: PathBuf,
    log: LogSpec,
    tag: String,
    children: Vec<Child>,
    /// The process group while the product runs (its leader stays
    /// unreaped until then, so the id cannot be reused).
    pgid: Option<i32>,
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

    pub fn is_installed(&self, exe: &Path) -> bool {
        self.binary_path(exe).is_ok_and(|b| b.is_file())
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

    fn installed_binary(&self, exe: &Path) -> Result<PathBuf, Error> {
        let bin = self.binary_path(exe)?;
        if !bin.is_file() {
            return Err(Error::NotInstalled {
                product: self.name.clone(),
                binary: bin,
                package: self.package.clone(),
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

    /// Writes the product's files into `settings.dir`, runs its `[[init]]`
    /// commands and starts its processes in a new process group. It is
    /// not ready yet: see [`Running::wait_ready`].
    pub fn start(&self, mode: Mode, settings: &Settings) -> Result<Running, Error> {
        let unsupported = |why: &str| Error::Unsupported {
            product: self.name.clone(),
            mode,
            why: why.to_string(),
        };
        if !self.modes.contains(&mode) {
            return Err(unsupported("the product file does not list this mode"));
        }
        if settings.parent.is_some() && !self.parent_modes.contains(&mode) {
            return Err(unsupported("no parent proxy in this mode"));
        }
        if settings.disk.is_some() && !self.disk_cache {
            return Err(unsupported("no disk cache"));
        }
        if mode == Mode::Reverse && settings.addrmap.is_none() {
            return Err(unsupported("reverse mode needs the origin address map"));
        }
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
        if let (Some(d), Some(p)) = (&settings.disk, &disk_dir) {
            v.insert("disk", "1".into());
            v.insert("disk_dir", path_str(p));
            v.insert("disk_bytes", d.size.to_string());
            v.insert("disk_mb", mib(d.size).to_string());
        }
        if let Some(p) = settings.parent {
            v.insert("parent", p.to_string());
            v.insert("parent_host", p.ip().to_string());
            v.insert("parent_port", p.port().to_string());
        }
        v.insert(mode.name(), "1".into());
        if let Some(map) = settings.addrmap {
            render::check_names(map).map_err(|m| self.setup("address map", m))?;
            v.insert("origin_map", map.to_text());
            v.insert("squid_origins", render::squid_origins(map));
            v.insert("varnish_backends", render::varnish_backends(map));
            v.insert("varnish_routing", render::varnish_routing(map));
            v.insert("nginx_origin_map", render::nginx_origin_map(map));
            v.insert("nginx_upstreams", render::nginx_upstreams(map));
            v.insert("ats_remap", render::ats_remap(map));
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
            for c in list.iter().filter(|c| applies(&c.modes, mode)) {
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
            probe_logged: self.ready.log,
            log_mark: 0,
            pending: false,
            stop_signal: self.stop_signal(),
            grace: Duration::from_secs_f64(self.stop.grace_secs),
            log_path: dir.join(r("log.path", &self.log.path)?),
            log: self.log.clone(),
            tag: format!("{instance}-{}", std::process::id()),
            children: Vec::new(),
            pgid: None,
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

impl Running {
    pub fn product(&self) -> &str {
        &self.product
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// The product's access log.
    pub fn access_log(&self) -> &Path {
        &self.log_path
    }

    /// Whether it was started (or restarted) and neither cut nor stopped
    /// since, and its first process has not exited.
    pub fn is_running(&self) -> bool {
        self.pgid.is_some()
            && self
                .children
                .first()
                .is_some_and(|c| process::exit_status(c).is_none())
    }

    /// Live processes of the product: its process group, and any process
    /// started with its tag that left the group.
    pub fn pids(&self) -> Vec<i32> {
        members(self.pgid, &self.tag)
    }

    /// Waits until the product answers its readiness probe (a TCP
    /// connection to its address and any HTTP reply to the probe request),
    /// starts its after-ready processes, and with `ready.log` waits until
    /// a probe shows in the access log; returns when it is ready.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<Instant, Error> {
        let start = Instant::now();
        if self.pgid.is_none() {
            return Err(self.state("is not running"));
        }
        loop {
            if let Some(status) = self.children.first().and_then(process::exit_status) {
                return Err(Error::Exited {
                    product: self.product.clone(),
                    status,
                    tail: self.tails(),
                });
            }
            if probe(self.listen, &self.probe) {
                if self.pending {
                    self.pending = false;
                    self.log_mark = self.log_len();
                    self.spawn(true)?;
                }
                if !self.probe_logged || self.probe_in_log() {
                    return Ok(Instant::now());
                }
            }
            if start.elapsed() >= timeout {
                return Err(Error::NotReady {
                    product: self.product.clone(),
                    listen: self.listen,
                    waited: timeout,
                    tail: self.tails(),
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// SIGKILL to the whole process group at once, nothing graceful; then
    /// any process of it that left the group. Returns when the group was
    /// killed.
    pub fn power_cut(&mut self) -> Result<Instant, Error> {
        let Some(pg) = self.pgid else {
            return Err(self.state("is not running: nothing to cut"));
        };
        let _ = process::signal_group(pg, libc::SIGKILL);
        let at = Instant::now();
        self.kill_all();
        Ok(at)
    }

    /// Starts the product again in the same run directory (configuration
    /// and caches as they were); returns when its first process was
    /// spawned (the power-on). It must be cut or stopped first.
    pub fn restart(&mut self) -> Result<Instant, Error> {
        if self.pgid.is_some() {
            return Err(self.state("is still running: cut or stop it before a restart"));
        }
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            let left = members(None, &self.tag);
            if left.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(self.state(&format!(
                    "processes {left:?} of the last start will not die"
                )));
            }
            for p in left {
                process::signal(p, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.remove_stale()?;
        self.spawn_all()
    }

    /// The graceful stop: after the log's `delay_secs`, the product file's
    /// signal to every process, then SIGKILL to whatever is left after its
    /// grace time. Stopping a product that is not running does nothing.
    pub fn stop(&mut self) -> Result<(), Error> {
        let Some(pg) = self.pgid else {
            return Ok(());
        };
        if self.log.delay_secs > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(self.log.delay_secs));
        }
        let _ = process::signal_group(pg, self.stop_signal);
        for p in members(None, &self.tag) {
            process::signal(p, self.stop_signal);
        }
        let deadline = Instant::now() + self.grace;
        while !members(Some(pg), &self.tag).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = process::signal_group(pg, libc::SIGKILL);
        self.kill_all();
        Ok(())
    }

    /// Requests and hits in the access log as it is now (a missing log
    /// counts nothing). Products write their logs with some delay (up to
    /// a few seconds for Traffic Server); after [`Running::stop`] the log is
    /// complete.
    pub fn hits_from_log(&self) -> Result<LogCounts, Error> {
        match std::fs::read(&self.log_path) {
            Ok(b) => Ok(log::count(&String::from_utf8_lossy(&b), &self.log)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LogCounts::default()),
            Err(e) => Err(Error::Io {
                product: self.product.clone(),
                what: "read the access log".into(),
                path: self.log_path.clone(),
                source: e,
            }),
        }
    }

    /// The last lines of the product's own logs and of its processes'
    /// output, each headed by its file.
    pub fn tails(&self) -> String {
        let mut files = self.diagnostics.clone();
        for l in &self.launches {
            let p = self.out_path(&l.name);
            if !files.contains(&p) {
                files.push(p);
            }
        }
        let mut out = String::new();
        for f in files {
            let t = process::tail(&f, 20);
            if !t.trim().is_empty() {
                out.push_str(&format!("== {} ==\n{t}\n", f.display()));
            }
        }
        out
    }

    fn state(&self, what: &str) -> Error {
        Error::State {
            product: self.product.clone(),
            what: what.to_string(),
        }
    }

    fn out_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.out"))
    }

    fn remove_stale(&self) -> Result<(), Error> {
        for c in &self.cleanup {
            process::remove_matching(c).map_err(|e| Error::Io {
                product: self.product.clone(),
                what: "remove a stale file".into(),
                path: c.into(),
                source: e,
            })?;
        }
        Ok(())
    }

    fn run_init(&mut self, l: &Launch) -> Result<(), Error> {
        let out = self.dir.join(format!("init-{}.out", l.name));
        let mut child =
            process::spawn(&l.argv, &self.dir, &out, &self.tag, None).map_err(|e| Error::Io {
                product: self.product.clone(),
                what: format!("run {}", l.argv[0]),
                path: self.dir.clone(),
                source: e,
            })?;
        let deadline = Instant::now() + INIT_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = process::signal_group(child.id() as i32, libc::SIGKILL);
                    let _ = child.wait();
                    break format!("no end after {INIT_TIMEOUT:?}");
                }
            }
        };
        if status == "exit status: 0" {
            return Ok(());
        }
        let mut tail = self.tails();
        let t = process::tail(&out, 20);
        if !t.trim().is_empty() {
            tail = format!("== {} ==\n{t}\n{tail}", out.display());
        }
        Err(Error::Command {
            product: self.product.clone(),
            command: l.argv.join(" "),
            status,
            tail,
        })
    }

    /// Spawns every process but the after-ready ones, the first leading a
    /// new process group the others join; returns when the first was
    /// spawned.
    fn spawn_all(&mut self) -> Result<Instant, Error> {
        let at = self.spawn(false)?;
        self.pending = self.launches.iter().any(|l| l.after_ready);
        Ok(at)
    }

    /// Spawns the processes whose `after_ready` is `later`.
    fn spawn(&mut self, later: bool) -> Result<Instant, Error> {
        let mut at = None;
        for i in 0..self.launches.len() {
            if self.launches[i].after_ready != later {
                continue;
            }
            let out = self.out_path(&self.launches[i].name);
            let argv = &self.launches[i].argv;
            match process::spawn(argv, &self.dir, &out, &self.tag, self.pgid) {
                Ok(c) => {
                    if self.pgid.is_none() {
                        self.pgid = Some(c.id() as i32);
                    }
                    at.get_or_insert_with(Instant::now);
                    self.children.push(c);
                }
                Err(e) => {
                    let err = Error::Io {
                        product: self.product.clone(),
                        what: format!("start {}", argv[0]),
                        path: self.dir.clone(),
                        source: e,
                    };
                    if let Some(pg) = self.pgid {
                        let _ = process::signal_group(pg, libc::SIGKILL);
                    }
                    self.kill_all();
                    return Err(err);
                }
            }
        }
        Ok(at.unwrap_or_else(Instant::now))
    }

    fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log_path).map_or(0, |m| m.len())
    }

    /// Whether the access log got a probe's line since `log_mark`.
    fn probe_in_log(&self) -> bool {
        let Ok(b) = std::fs::read(&self.log_path) else {
            return false;
        };
        let from = (self.log_mark as usize).min(b.len());
        String::from_utf8_lossy(&b[from..]).contains(crate::spec::PROBE_MARK)
    }

    /// SIGKILL to every process of the product until none is alive, then
    /// reaps its children.
    fn kill_all(&mut self) {
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            let left = members(self.pgid, &self.tag);
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            for p in left {
                process::signal(p, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        for mut c in self.children.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.pgid = None;
        self.pending = false;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(pg) = self.pgid {
            let _ = process::signal_group(pg, libc::SIGKILL);
            self.kill_all();
        }
    }
}

/// Sends the probe and reads the start of a reply: is it HTTP?
fn probe(listen: SocketAddr, request: &str) -> bool {
    let mut addr = listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    if s.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 5];
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    &buf == b"HTTP/"
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
    fn sizes_in_mib_are_at_least_one() {
        assert_eq!(mib(0), 1);
        assert_eq!(mib(64 << 20), 64);
        assert_eq!(mib((64 << 20) + 5), 64);
    }
}
