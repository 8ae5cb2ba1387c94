//! The lineup's side of a product (`cacheoff_products`): which product
//! file, how it is started for a contender (port, cache sizes, address
//! map, its own directory), the MSL probe beside its run, and its access
//! log held against what the robots saw.

use super::downtime::PowerSwitch;
use super::file::Msl;
use super::Contender;
use anyhow::{anyhow, Context};
use cacheoff_agent::BoundServers;
use cacheoff_products::{Disk, LogCounts, Mode, ProductSpec, Settings};
use cacheoff_rundir::lineup::Conformance;
use cacheoff_workload::Workload;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a product may take to answer after a start.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A built-in product file by name, or a product file by path.
pub fn spec(name: &str) -> anyhow::Result<ProductSpec> {
    if ProductSpec::builtin_names().contains(&name) {
        return Ok(ProductSpec::builtin(name)?);
    }
    let path = Path::new(name);
    if path.exists() {
        return Ok(ProductSpec::load(path)?);
    }
    Err(anyhow!(
        "no product {name:?}: the built-in ones are {}, or give a product file's path",
        ProductSpec::builtin_names().join(", ")
    ))
}

/// This executable (the reference proxy's binary), also when its file was
/// replaced while the lineup runs (a rebuild).
fn exe() -> anyhow::Result<std::path::PathBuf> {
    let path = std::env::current_exe().context("cannot find the cacheoff executable")?;
    if path.exists() {
        return Ok(path);
    }
    Ok("/proc/self/exe".into())
}

/// Every contender's binary is there, or the error says how to get it.
pub fn check_installed(all: &[Contender]) -> anyhow::Result<()> {
    let exe = exe()?;
    let missing: Vec<&str> = all
        .iter()
        .filter(|c| !c.spec.is_installed(&exe))
        .map(|c| c.spec.name.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(anyhow!(
        "not installed: {}; run ops/install-products.sh (as root) first",
        missing.join(", ")
    ))
}

/// A product the lineup started, with what the summary says of it.
pub struct Running {
    inner: cacheoff_products::Running,
    /// Where it takes HTTPS, when started with the test CA.
    tls_addr: Option<SocketAddr>,
    label: String,
    version: Option<String>,
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.inner.listen()
    }

    /// The address robots use: the HTTPS one when there is one.
    pub fn robots_addr(&self) -> SocketAddr {
        self.tls_addr.unwrap_or_else(|| self.addr())
    }

    /// `Squid 5.7 (64MB memory, 64MB disk)`.
    pub fn label(&self) -> String {
        self.label.clone()
    }

    pub fn version(&self) -> Option<String> {
        self.version.clone()
    }

    /// Sampling what it spends, from now on.
    pub fn watch(&self) -> Option<cacheoff_run::watch::Watch> {
        self.inner
            .watch_target()
            .map(cacheoff_run::watch::Watch::new)
    }
}

impl PowerSwitch for Running {
    fn power_cut(&mut self) -> anyhow::Result<()> {
        self.inner.power_cut()?;
        Ok(())
    }
    fn power_on(&mut self) -> anyhow::Result<()> {
        self.inner.restart()?;
        Ok(())
    }
}

fn free_port() -> anyhow::Result<SocketAddr> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot find a free port")?;
    Ok(l.local_addr()?)
}

/// Starts `c` in `dir/product` for workload `w`, its origin servers
/// `bound`, fetching through `parent` if given (SPE: the Collector),
/// taking HTTPS with `pki`'s certificate if given, and waits until it
/// answers.
pub fn start(
    c: &Contender,
    w: &Workload,
    bound: &BoundServers,
    dir: &Path,
    parent: Option<SocketAddr>,
    pki: Option<&cacheoff_tls::Pki>,
) -> anyhow::Result<Running> {
    let size = w
        .cache_size
        .map(|b| b.0)
        .context("the workload has no cache size: give --cache-size")?;
    let map = bound.addr_map();
    let exe = exe()?;
    let settings = Settings {
        listen: free_port()?,
        mem: size,
        disk: c.spec.disk_cache.then(|| Disk::in_run_dir(size)),
        addrmap: (c.mode == Mode::Reverse).then_some(&map),
        parent,
        dir: dir.join("product"),
        exe: exe.clone(),
        tls: match pki {
            Some(p) => Some(cacheoff_products::TlsSettings {
                listen: free_port()?,
                cert: p.cert_path(),
                key: p.key_path(),
            }),
            None => None,
        },
    };
    let mut inner = c.spec.start(c.mode, &settings)?;
    inner.wait_ready(READY_TIMEOUT)?;
    cacheoff_run::preflight::check(inner.listen())?;
    let tls_addr = settings.tls.as_ref().map(|t| t.listen);
    if let Some(a) = tls_addr {
        // A terminator of its own (hitch) may listen a little later.
        let t = std::time::Instant::now();
        while std::net::TcpStream::connect(a).is_err() {
            if t.elapsed() > READY_TIMEOUT {
                anyhow::bail!("{}: nothing listens for HTTPS on {a}", c.spec.name);
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }
    let number = c.spec.version(&exe).ok().and_then(|v| v.number);
    let version = number.as_ref().map_or(String::new(), |n| format!(" {n}"));
    // The disk cache as the product got it: some need more than asked.
    let disk = cacheoff_base::Bytes(c.spec.disk_size(size));
    let size = cacheoff_base::Bytes(size);
    let label = format!(
        "{}{version} ({size} memory{})",
        c.spec.title,
        if c.spec.disk_cache {
            format!(", {disk} disk")
        } else {
            String::new()
        }
    );
    Ok(Running {
        inner,
        tls_addr,
        label,
        version: number,
    })
}

/// Runs the HTTP caching conformance suite against `c`, started anew in
/// `dir/product` in front of the suite's own origin (a surrogate's only
/// name), with a 64 MB cache; the report goes to `dir/conform.json`.
pub fn conform(c: &Contender, dir: &Path) -> anyhow::Result<Conformance> {
    let origin = Arc::new(
        cacheoff_conform::Origin::bind((Ipv4Addr::LOCALHOST, 0).into())
            .context("the conformance suite's origin")?,
    );
    let map = cacheoff_workload::AddrMap::for_servers(&[origin.addr()]);
    let settings = Settings {
        listen: free_port()?,
        mem: 64 << 20,
        disk: None,
        addrmap: (c.mode == Mode::Reverse).then_some(&map),
        parent: None,
        dir: dir.join("product"),
        exe: exe()?,
        tls: None,
    };
    let mut running = c.spec.start(c.mode, &settings)?;
    let report = running.wait_ready(READY_TIMEOUT).map(|_| {
        cacheoff_conform::run(
            cacheoff_conform::Target {
                mode: match c.mode {
                    Mode::Forward => cacheoff_conform::Mode::Forward,
                    Mode::Reverse => cacheoff_conform::Mode::Reverse,
                },
                proxy: settings.listen,
                origin: origin.addr(),
                host: Some(map.entries()[0].0.clone()),
            },
            origin.clone(),
        )
    });
    let stopped = running.stop();
    let report = report?;
    stopped?;
    let file = dir.join("conform.json");
    std::fs::write(&file, report.json())
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(Conformance {
        passed: report.passed as u32,
        failed: report.failed as u32,
        optional: report.optional as u32,
    })
}

/// The MSL verdict of one product.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MslVerdict {
    pub time_wait_s: f64,
    pub pass: bool,
}

/// Measures the TIME-WAIT of the product at `addr` on a thread of its
/// own (it only needs the product listening, not idle).
pub fn msl_beside(
    addr: SocketAddr,
    mode: Mode,
    settings: &Msl,
) -> JoinHandle<Result<MslVerdict, cacheoff_msl::MslError>> {
    let mut cfg = cacheoff_msl::MslConfig::new(addr);
    if mode == Mode::Reverse {
        cfg.request =
            cacheoff_msl::MslConfig::surrogate_request(&cacheoff_workload::server_name(0));
    }
    cfg.timeout = settings.timeout.0;
    std::thread::spawn(move || {
        let r = cacheoff_msl::measure(&cfg)?;
        Ok(MslVerdict {
            time_wait_s: r.time_wait_s(),
            pass: r.pass(),
        })
    })
}

/// What the product's access log says beside what the robots saw.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LogCheck {
    pub robot_hits: u64,
    pub robot_xacts: u64,
    pub log_hits: u64,
    pub log_requests: u64,
}

/// Reads the product's log after the main run (once the product had the
/// time its product file says it takes to write the last lines: Traffic
/// Server's come seconds late), prints it beside the robots' count and
/// keeps both in `run_dir/product-log.json`.
pub fn compare_hits(running: &Mutex<Running>, run_dir: &Path, before: Option<LogCounts>) {
    let before = before.unwrap_or_default();
    let counts = log_counts(running).map(|c| LogCounts {
        hits: c.hits.saturating_sub(before.hits),
        requests: c.requests.saturating_sub(before.requests),
    });
    let run = cacheoff_rundir::RunDir::open(run_dir);
    match (counts, run) {
        (Ok(c), Ok(run)) => {
            let total = run.summary.as_ref().map(|s| &s.total);
            let (robot_hits, robot_xacts) = total.map_or((0, 0), |t| (t.rt_ms.hit.count, t.xacts));
            let check = LogCheck {
                robot_hits,
                robot_xacts,
                log_hits: c.hits,
                log_requests: c.requests,
            };
            let diff = if robot_hits > 0 {
                (c.hits as f64 - robot_hits as f64) / robot_hits as f64 * 100.0
            } else {
                0.0
            };
            cacheoff_run::console::print(&format!(
                "hits: robots saw {robot_hits} of {robot_xacts}; the product's log says {} of {} ({diff:+.2}%)",
                c.hits, c.requests
            ));
            if let Ok(json) = serde_json::to_string_pretty(&check) {
                let _ = std::fs::write(run_dir.join(LOG_CHECK_FILE), json + "\n");
            }
        }
        (Err(e), _) => {
            cacheoff_run::console::print(&format!("cacheoff: cannot read the product's log: {e}"))
        }
        (_, Err(e)) => {
            cacheoff_run::console::print(&format!("cacheoff: cannot read the run back: {e}"))
        }
    }
}

/// The product's access log so far, once its last lines are written.
pub fn log_counts(running: &Mutex<Running>) -> Result<LogCounts, cacheoff_products::Error> {
    let delay = lock(running).inner.log_delay();
    std::thread::sleep(delay);
    lock(running).inner.hits_from_log()
}

/// In a lineup's run directory: the product log's hits beside the robots'.
pub const LOG_CHECK_FILE: &str = "product-log.json";

/// Stops the product gracefully (then by force).
pub fn stop(running: &Mutex<Running>) -> anyhow::Result<()> {
    lock(running).inner.stop()?;
    Ok(())
}

pub fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The product under test now, for a second Ctrl-C.
static CURRENT: Mutex<Option<Arc<Mutex<Running>>>> = Mutex::new(None);

/// Marks `r` as the product under test (None: no product runs).
pub fn set_current(r: Option<Arc<Mutex<Running>>>) {
    *lock(&CURRENT) = r;
}

/// Kills the product under test at once, if any (the process is exiting).
pub fn kill_current() {
    if let Ok(cur) = CURRENT.try_lock() {
        if let Some(r) = cur.as_ref() {
            if let Ok(mut r) = r.try_lock() {
                let _ = r.inner.power_cut();
            }
        }
    }
}
