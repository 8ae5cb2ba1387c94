//! Workloads as the root tests build them, and in-process runs of them
//! (`cacheoff_run::run_in`), each into its own directory.
//!
//! Runs share this machine's cores and one process's descriptors: the
//! [`Gate`] lets at most [`RUNS_AT_ONCE`] run at once, and a big one
//! (thousands of robots) alone. More at once overloads 2 cores: runs of
//! thousands of requests a second fell behind their plans (CI, 4 at once).
//!
//! The machine may be busy with something else (`ops/busy-ci.sh` runs the
//! suite beside a CPU hog): workloads built here queue what a slow moment
//! leaves due ([`ROOMY_BACKLOG`]), and [`planned`] says what a run must
//! have issued, so tests assert the plan's counts, never this machine's
//! throughput.

use cacheoff_agent::StopHandle;
use cacheoff_base::{Bytes, Dur, Rate};
use cacheoff_run::{run_in, RunResult};
use cacheoff_rundir::Summary;
use cacheoff_stats::Entry;
use cacheoff_workload::{
    load, load_text, Dist, LifeCycle, ObjectSpace, Overrides, Plan, Quantity, RequestMix, Workload,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;

/// Workers of a run: one per core of this machine.
pub const WORKERS: usize = 2;

/// The built-in `simple` workload: `rate` requests per second from
/// `robots` robots to `servers` servers, `warmup_s` seconds of warm-up,
/// then `measured_s` measured.
pub fn simple(rate: f64, robots: u32, servers: u32, warmup_s: f64, measured_s: f64) -> Workload {
    roomy(
        load(
            "simple",
            &Overrides {
                rate: Some(Rate(rate).into()),
                robots: Some(robots),
                servers: Some(servers),
                warmup: Some(Dur::secs(warmup_s)),
                duration: Some(Dur::secs(measured_s)),
                ..Default::default()
            },
        )
        .unwrap(),
    )
}

/// Due requests a robot of a test workload may queue: more than any test
/// plans for one robot. A machine busy with something else can leave a
/// run seconds behind its plan; the robots then queue what came due and
/// send it late (the drain at the end waits for it) instead of dropping
/// it as `backlog_overflow`, so a test's counts are its plan's however
/// fast the machine is.
pub const ROOMY_BACKLOG: u32 = 1_000_000;

/// `w` with [`ROOMY_BACKLOG`], and a connect timeout that thousands of
/// connects at once on a busy machine (SYNs sent again after 1 s and 3 s)
/// do not reach.
pub fn roomy(mut w: Workload) -> Workload {
    w.robots.backlog = ROOMY_BACKLOG;
    w.timeouts.connect = Dur::secs(30.0);
    w
}

/// A built-in workload at `rate` requests per second, its phases
/// compressed so that the plateau lasts `plateau_s` seconds, with a cache
/// of `cache_size` bytes (for fill goals) where given.
pub fn compressed(name: &str, rate: f64, plateau_s: f64, cache_size: Option<u64>) -> Workload {
    roomy(
        load(
            name,
            &Overrides {
                rate: Some(Rate(rate).into()),
                cache_size: cache_size.map(Bytes),
                plateau: Some(Dur::secs(plateau_s)),
                ..Default::default()
            },
        )
        .unwrap(),
    )
}

/// A workload from the `text` of a workload file named `file`, with
/// [`ROOMY_BACKLOG`].
pub fn from_text(file: &str, text: &str) -> Workload {
    roomy(load_text(file, text, &Overrides::default()).unwrap())
}

/// PolyMix-3's content types (workloads.md) in a short workload.
const POLYMIX_CONTENT: &str = r#"
name = "polymix-content"
peak_rate = "2000/s"
content = "polymix"
[robots]
count = 200
[servers]
count = 20
[popularity]
recurrence = 0.7237
[[phases]]
name = "warm"
duration = "1s"
[[phases]]
name = "meas"
duration = "8s"
measured = true
"#;

/// PolyMix-3's content types: pages with embedded images, and more.
pub fn polymix_content() -> Workload {
    from_text("polymix-content.toml", POLYMIX_CONTENT)
}

/// PolyMix's request types: 80% basic, 5% IMS answered 200, 10% IMS
/// answered 304, 5% reloads.
pub fn polymix_requests(w: &mut Workload) {
    w.requests = RequestMix {
        basic: 0.80,
        ims200: 0.05,
        ims304: 0.10,
        reload: 0.05,
        ..RequestMix::basic_only()
    };
}

/// Objects that change every `mean_s` seconds on average, `with_lmt` of
/// them with a Last-Modified date.
pub fn changing(w: &mut Workload, mean_s: f64, with_lmt: f64) {
    w.content[0].life_cycle = LifeCycle {
        length: Dist::exp(Quantity::Time, mean_s),
        variance: 0.5,
        with_lmt,
        modified_ago: None,
    };
}

struct Gate {
    used: Mutex<u32>,
    freed: Condvar,
}

static GATE: Gate = Gate {
    used: Mutex::new(0),
    freed: Condvar::new(),
};

/// Slots of the gate held by one run, given back when dropped.
struct Slots(u32);

impl Drop for Slots {
    fn drop(&mut self) {
        *GATE.used.lock().unwrap_or_else(|e| e.into_inner()) -= self.0;
        GATE.freed.notify_all();
    }
}

/// In-process runs at once in one test binary.
pub const RUNS_AT_ONCE: u32 = 2;

fn take_slots(w: &Workload) -> Slots {
    let n = if w.robots.count >= 1000 {
        RUNS_AT_ONCE
    } else {
        1
    };
    let mut used = GATE.used.lock().unwrap_or_else(|e| e.into_inner());
    while *used + n > RUNS_AT_ONCE {
        used = GATE.freed.wait(used).unwrap_or_else(|e| e.into_inner());
    }
    *used += n;
    Slots(n)
}

/// Runs `w` into `dir` (an existing, empty directory) with `workers`
/// workers, through `proxy` if any, until its end or `stop`; panics if
/// the run fails.
pub fn run_into(
    dir: &Path,
    w: Workload,
    proxy: Option<SocketAddr>,
    workers: usize,
    stop: &StopHandle,
) -> RunResult {
    let _slots = take_slots(&w);
    // The manifest's command line names the test file that ran it.
    let argv = [env!("CARGO_CRATE_NAME").to_string()];
    run_in(dir, w, proxy, workers, true, &argv, stop)
        .map_err(anyhow::Error::from)
        .unwrap()
}

/// Runs `w` with [`WORKERS`] workers into a new temporary directory,
/// which lasts as long as the returned handle.
pub fn run(w: Workload, proxy: Option<SocketAddr>) -> (tempfile::TempDir, RunResult) {
    let dir = tempfile::tempdir().unwrap();
    let r = run_into(dir.path(), w, proxy, WORKERS, &StopHandle::new());
    (dir, r)
}

/// The setup of a quiet run of `w` reaching the servers `via`, with
/// [`WORKERS`] workers and nothing else.
pub fn setup(w: Workload, via: cacheoff_agent::Via) -> cacheoff_run::Setup {
    cacheoff_run::Setup::quiet(w, via, WORKERS)
}

/// Runs `w` to the surrogate at `surrogate` (reverse mode), its origin
/// servers bound beforehand as `bound`, into a new temporary directory.
pub fn run_reverse(
    w: Workload,
    surrogate: SocketAddr,
    bound: std::sync::Arc<cacheoff_agent::BoundServers>,
) -> (tempfile::TempDir, RunResult) {
    let _slots = take_slots(&w);
    let dir = tempfile::tempdir().unwrap();
    let argv = [env!("CARGO_CRATE_NAME").to_string()];
    let setup = cacheoff_run::Setup {
        bound: Some(bound),
        ..setup(w, cacheoff_agent::Via::Surrogate(surrogate))
    };
    let r = cacheoff_run::run_setup(dir.path(), setup, &argv, &StopHandle::new())
        .map_err(anyhow::Error::from)
        .unwrap();
    (dir, r)
}

/// A thread that uses `stop` once the run in `dir` has written
/// `intervals` intervals.
pub fn stop_after(dir: &Path, intervals: usize, stop: &StopHandle) -> JoinHandle<()> {
    let (dir, stop): (PathBuf, _) = (dir.to_path_buf(), stop.clone());
    std::thread::spawn(move || {
        wait_for_intervals(&dir, intervals);
        stop.stop();
    })
}

/// Complete (newline-ended) lines in a run's `intervals.jsonl` so far.
pub fn intervals_written(run: &Path) -> usize {
    std::fs::read(run.join("intervals.jsonl"))
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Waits until the run in `run` has written `n` intervals.
pub fn wait_for_intervals(run: &Path, n: usize) {
    cacheoff_testkit::until(
        &format!("{n} intervals in {}", run.display()),
        std::time::Duration::from_secs(60),
        || intervals_written(run) >= n,
    );
}

/// What `w`'s plan asks for on `workers` workers: the open-loop arrivals
/// its schedule accepts, as the pacer issues them, in all and per phase.
/// A run issues exactly these however late the machine lets it be (the
/// pacer catches up), so tests hold the run's `issued` to them instead of
/// to what this machine managed in the time. Not for schedules with goal
/// phases, whose time line follows the run.
pub fn planned_on(w: &Workload, workers: usize) -> Planned {
    assert!(
        w.phases.iter().all(|p| p.goal.is_none()),
        "a goal phase's length follows the run"
    );
    let objects = ObjectSpace::new(w.seed, &w.content);
    let mut out = Planned {
        total: 0,
        by_phase: vec![0; w.phases.len()],
    };
    for worker in 0..workers as u32 {
        let plan = Plan::new(w, &objects, worker, workers as u32);
        let schedule = plan.schedule();
        let mut arrivals = plan.arrivals().expect("an open-loop workload");
        while let Some(t) = arrivals.peek_ns() {
            let s = t as f64 / 1e9;
            let Some(phase) = schedule.phase_at(s) else {
                break;
            };
            if arrivals.pop(schedule.factors_at(s)).is_some() {
                out.total += 1;
                out.by_phase[phase] += 1;
            }
        }
    }
    out
}

/// [`planned_on`] with [`WORKERS`] workers, as [`run`] runs.
pub fn planned(w: &Workload) -> Planned {
    planned_on(w, WORKERS)
}

/// Requests a plan asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub total: u64,
    /// In the order of the workload's phases.
    pub by_phase: Vec<u64>,
}

/// Transactions of `e` that ended one way or another: a verified reply,
/// an abort on purpose, or an error.
pub fn ended(e: &Entry) -> u64 {
    e.xacts + e.aborts.robot + e.aborts.server + e.errors.total
}

/// Asserts that a run of a workload without embedded objects issued
/// every request `plan` asks for and that each one ended (answered,
/// aborted or counted as an error): nothing was lost or made up, however
/// slow the machine was.
pub fn assert_every_planned_request_ended(plan: &Planned, t: &Entry) {
    assert_eq!(t.issued, plan.total, "issued vs planned");
    assert_eq!(
        ended(t),
        t.issued,
        "ended vs issued: {:?}",
        t.errors.by_kind
    );
}

/// The phase `name` of a run's summary.
pub fn phase<'a>(s: &'a Summary, name: &str) -> &'a Entry {
    s.phases.iter().find(|p| p.name == name).unwrap()
}

/// The names of a run's phases, in order.
pub fn phase_names(s: &Summary) -> Vec<&str> {
    s.phases.iter().map(|p| p.name.as_str()).collect()
}
