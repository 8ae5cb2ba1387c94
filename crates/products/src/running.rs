//! A started product: its rendered command lines, its process group, and
//! the five things done to it (wait until it answers, power cut, restart,
//! stop, read its log).

use crate::error::Error;
use crate::log::{self, LogCounts};
use crate::process::{self, members};
use crate::spec::{LogSpec, Mode};
use cacheoff_resources::{Cgroup, Target};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// How long an `[[init]]` command may take.
const INIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long killed processes may take to be gone.
const KILL_WAIT: Duration = Duration::from_secs(10);

pub(crate) struct Launch {
    pub(crate) name: String,
    pub(crate) argv: Vec<String>,
    pub(crate) after_ready: bool,
}

/// A started product. Dropping it kills every process of it at once.
pub struct Running {
    pub(crate) product: String,
    pub(crate) mode: Mode,
    pub(crate) dir: PathBuf,
    pub(crate) listen: SocketAddr,
    pub(crate) launches: Vec<Launch>,
    pub(crate) cleanup: Vec<String>,
    pub(crate) diagnostics: Vec<PathBuf>,
    pub(crate) probe: String,
    /// Ready only once a probe shows in the access log.
    pub(crate) probe_logged: bool,
    /// The access log's length when the after-ready processes started.
    pub(crate) log_mark: u64,
    /// Ready only once this file got this text since the start.
    pub(crate) ready_text: Option<(PathBuf, String)>,
    /// That file's length at the start.
    pub(crate) ready_mark: u64,
    /// The after-ready processes of this start are still to be spawned.
    pub(crate) pending: bool,
    pub(crate) stop_signal: i32,
    pub(crate) grace: Duration,
    pub(crate) log_path: PathBuf,
    pub(crate) log: LogSpec,
    pub(crate) tag: String,
    pub(crate) children: Vec<Child>,
    /// The process group while the product runs (its leader stays
    /// unreaped until then, so the id cannot be reused).
    pub(crate) pgid: Option<i32>,
    /// Its own cgroup, when the machine lets us make one: what it spends.
    pub(crate) cgroup: Option<Cgroup>,
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

    /// What to sample for the product's spending: its cgroup, else its
    /// first process and that one's descendants.
    pub fn watch_target(&self) -> Option<Target> {
        match &self.cgroup {
            Some(c) => Target::parse(&c.path().to_string_lossy()).ok(),
            None => self.pgid.and_then(|p| Target::parse(&p.to_string()).ok()),
        }
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
    /// starts its after-ready processes, and waits for what else its
    /// `[ready]` table asks (a probe in the access log, a text in a file);
    /// returns when it is ready.
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
                    self.log_mark = file_len(&self.log_path);
                    self.spawn(true)?;
                }
                let text_seen = match &self.ready_text {
                    Some((file, text)) => grew_with(file, self.ready_mark, text),
                    None => true,
                };
                if text_seen
                    && (!self.probe_logged
                        || grew_with(&self.log_path, self.log_mark, crate::spec::PROBE_MARK))
                {
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
    /// spawned (the power-on). It must be down first: cut, stopped, or
    /// exited by itself.
    pub fn restart(&mut self) -> Result<Instant, Error> {
        if self.pgid.is_some() {
            if !members(self.pgid, &self.tag).is_empty() {
                return Err(self.state("is still running: cut or stop it before a restart"));
            }
            // It exited by itself: reap what is left.
            self.kill_all();
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

    /// How long the product may take to write a log line (its log's
    /// `delay_secs`): wait this long after the last request before
    /// [`Running::hits_from_log`] to count them all.
    pub fn log_delay(&self) -> Duration {
        Duration::from_secs_f64(self.log.delay_secs)
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

    pub(crate) fn remove_stale(&self) -> Result<(), Error> {
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

    pub(crate) fn run_init(&mut self, l: &Launch) -> Result<(), Error> {
        let out = self.dir.join(format!("init-{}.out", l.name));
        let mut child =
            process::spawn(&l.argv, &self.dir, &out, &self.tag, None, None).map_err(|e| {
                Error::Io {
                    product: self.product.clone(),
                    what: format!("run {}", l.argv[0]),
                    path: self.dir.clone(),
                    source: e,
                }
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
    pub(crate) fn spawn_all(&mut self) -> Result<Instant, Error> {
        if let Some((file, _)) = &self.ready_text {
            self.ready_mark = file_len(file);
        }
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
            match process::spawn(
                argv,
                &self.dir,
                &out,
                &self.tag,
                self.pgid,
                self.cgroup.as_ref(),
            ) {
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
        // What a dead product leaves behind (a power cut would wipe
        // shared memory too).
        let _ = self.remove_stale();
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

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Whether `text` is in `path` past its first `from` bytes.
fn grew_with(path: &Path, from: u64, text: &str) -> bool {
    let Ok(b) = std::fs::read(path) else {
        return false;
    };
    let from = (from as usize).min(b.len());
    String::from_utf8_lossy(&b[from..]).contains(text)
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
