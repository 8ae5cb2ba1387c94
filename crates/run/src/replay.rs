//! `cacheoff replay` as a library: a real access trace through the proxy
//! under test.
//!
//! One pass over the trace first (`cacheoff_trace`): it is checked whole
//! (a malformed line stops here, with its number, before anything runs),
//! and its ceilings are computed. Then the run: a workload of one traced
//! content type and one measured phase as long as the replay, whose robots
//! take their requests from the trace (`cacheoff_agent::TraceFeed`, read
//! again, each worker its share of the objects) instead of the plan.

use crate::command::{measure, How};
use crate::target::{Target, TargetSpec};
use crate::{console, Replay, RunError, RunResult};
use cacheoff_agent::TraceFeed;
use cacheoff_base::rng::mix64;
use cacheoff_base::{Bytes, Dur, Rate, RequestType};
use cacheoff_rundir::{Ceiling, Replayed};
use cacheoff_trace::ceiling::{CeilingCalc, Ceilings};
use cacheoff_trace::{Format, Method, Record, TraceReader};
use cacheoff_workload::{load_text, Overrides, PeakRate, TracedRequest, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a replay decides which objects are cachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachableRule {
    /// What the trace implies (method and status); all when it says nothing.
    Trace,
    /// Every GET and HEAD.
    All,
    /// None: every request must reach the origin.
    None,
}

impl CachableRule {
    /// As `trace.json` records it.
    pub fn name(self) -> &'static str {
        match self {
            CachableRule::Trace => "trace",
            CachableRule::All => "all",
            CachableRule::None => "none",
        }
    }
}

/// A replay as the command line asked for it.
pub struct ReplayPlan {
    /// The trace file (gzip or zstd compressed ones are read as they are).
    pub trace: PathBuf,
    /// Its format; detected when `None`.
    pub format: Option<Format>,
    /// Replay time per trace time (a positive number); else `rate`'s, or 1.
    pub speed: Option<f64>,
    /// The average request rate to replay at, the trace's timing scaled.
    pub rate: Option<Rate>,
    pub cachable: CachableRule,
    /// The cache size the ceilings assume (default: the reference proxy's
    /// memory), and the reference proxy's when it is the one tested.
    pub cache_size: Option<Bytes>,
    /// Origin servers the trace's sites are spread over (at least 1).
    pub servers: u32,
    /// Robots the trace's clients are spread over (at least 1).
    pub robots: u32,
    /// Origin servers' port (reverse mode: the surrogate's address map).
    pub server_port: Option<u16>,
    /// Origins wait the trace's time to first byte.
    pub ttfb: bool,
    pub target: TargetSpec,
    /// Its run directory defaults to `runs/<timestamp>-replay`.
    pub output: crate::Output,
}

/// Runs `plan` (`argv` goes into the manifest): the survey, the run and
/// the verdict, as `cacheoff run`'s.
pub fn run(a: ReplayPlan, argv: &[String]) -> Result<RunResult, RunError> {
    let cache_bytes = a.cache_size.map_or(cacheoff_proxy::DEFAULT_MEMORY, |b| b.0);
    let (format, ceilings) = survey(&a.trace, a.format.clone(), a.cachable, cache_bytes)?;
    if ceilings.requests == 0 {
        return Err(RunError::EmptyTrace(a.trace.clone()));
    }
    let trace_s = ceilings.duration_us as f64 / 1e6;
    let speed = match (a.speed, a.rate) {
        (Some(s), _) => s,
        (None, Some(rate)) if trace_s > 0.0 => rate.per_sec() * trace_s / ceilings.requests as f64,
        _ => 1.0,
    };
    let replay_s = trace_s / speed;
    console::print(&format!(
        "trace {} ({}): {} requests, {} objects, {:.1} s; replayed in {:.1} s (speed {speed:.3})",
        a.trace.display(),
        format.name(),
        ceilings.requests,
        ceilings.objects,
        trace_s,
        replay_s,
    ));
    console::print(&format!(
        "ceilings at {}: infinite {:.2}%, LRU {:.2}%, Belady, size-blind {:.2}% DHR",
        Bytes(cache_bytes),
        ceilings.infinite,
        ceilings.lru,
        ceilings.belady
    ));
    let workload = replay_workload(&a, &ceilings, replay_s, cache_bytes)?;
    let what = a.trace.display().to_string();
    let target = Target::choose(&workload, &a.target, &what, false)?;
    let replayed = Replayed {
        format: cacheoff_rundir::TRACE_FORMAT.into(),
        version: cacheoff_rundir::FORMAT_VERSION,
        file: what,
        trace_format: format.name().into(),
        requests: ceilings.requests,
        objects: ceilings.objects,
        cachable_requests: ceilings.cachable_requests,
        bytes: ceilings.bytes,
        trace_duration_s: trace_s,
        speed,
        cache_bytes,
        cachable_rule: a.cachable.name().into(),
        ceiling: Ceiling {
            infinite: ceilings.infinite,
            lru: ceilings.lru,
            belady: ceilings.belady,
        },
    };
    let feed = feed(
        &a.trace,
        format,
        Mapping {
            rule: a.cachable,
            speed,
            servers: a.servers,
            ttfb: a.ttfb,
        },
    );
    let how = How {
        trace: Some(Replay { feed, replayed }),
        fleet: None,
        tls_dir: None,
    };
    measure(workload, target, &a.output, how, argv, |r| {
        if let Some(c) = r.summary.ceiling {
            console::print(&format!(
                "DHR measured {:.2}% (offered {:.2}%); the trace allows {:.2}% (infinite cache), {:.2}% (LRU), {:.2}% (Belady, size-blind: not a bound)",
                r.summary.total.dhr.measured, r.summary.total.dhr.offered, c.infinite, c.lru, c.belady
            ));
        }
    })
}

/// Whether the replay treats `r` as cachable.
fn cachable(rule: CachableRule, r: &Record) -> bool {
    let by_method = matches!(r.method, Method::Get | Method::Head);
    // A 304 in a log revalidated a stored copy: it says the object is
    // cachable, not that it is not.
    let implied = r.cachable.filter(|_| r.status != Some(304));
    match rule {
        CachableRule::Trace => implied.unwrap_or(by_method),
        CachableRule::All => by_method,
        CachableRule::None => false,
    }
}

/// Reads the whole trace once: its format, and its ceilings under the
/// replay's cachability rule. The first malformed line is the error.
fn survey(
    path: &Path,
    format: Option<Format>,
    rule: CachableRule,
    cache_bytes: u64,
) -> Result<(Format, Ceilings), RunError> {
    let reader = TraceReader::open(path, format)?;
    let format = reader.format().clone();
    let mut calc = CeilingCalc::new(cache_bytes);
    for r in reader {
        let mut r = r?;
        r.cachable = Some(cachable(rule, &r));
        calc.add(&r);
    }
    Ok((format, calc.finish()))
}

/// The replay's workload: one content type (sizes come from the trace),
/// one measured phase as long as the replay (and a second to drain).
fn replay_workload(
    a: &ReplayPlan,
    c: &Ceilings,
    replay_s: f64,
    cache_bytes: u64,
) -> Result<Workload, RunError> {
    let rate = c.requests as f64 / replay_s.max(1e-3);
    let mut o = Overrides {
        rate: Some(PeakRate::PerSecond(Rate(rate))),
        robots: Some(a.robots),
        servers: Some(a.servers),
        server_port: a.server_port,
        cache_size: Some(Bytes(cache_bytes)),
        // A second past the last request, to drain.
        duration: Some(Dur::secs(replay_s + 1.0)),
        ..Overrides::default()
    };
    a.target.settle(&mut o);
    let mut w = load_text("replay.toml", REPLAY_WORKLOAD, &o)?;
    w.description = format!(
        "replay of {}: {} requests, {} objects",
        a.trace.display(),
        c.requests,
        c.objects
    );
    Ok(w)
}

/// What every replay runs before its settings (replay.toml).
const REPLAY_WORKLOAD: &str = include_str!("replay.toml");

/// How trace records become robots' requests.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    rule: CachableRule,
    speed: f64,
    servers: u32,
    ttfb: bool,
}

impl Mapping {
    /// The request `r` is in the replay, if it belongs to `worker`'s share
    /// (by its object, so a worker sees every request of its objects).
    fn request(&self, r: &Record, worker: u32, workers: u32) -> Option<TracedRequest> {
        if mix64(r.key) % u64::from(workers) != u64::from(worker) {
            return None;
        }
        let site = if r.site != 0 { r.site } else { r.key };
        Some(TracedRequest {
            at_us: (r.time_us as f64 / self.speed) as u64,
            key: r.key,
            server: (mix64(site) % u64::from(self.servers)) as u32,
            client: if r.client != 0 {
                r.client
            } else {
                mix64(r.key)
            },
            size: r.size,
            cachable: cachable(self.rule, r),
            ttfb_us: r
                .ttfb_us
                .filter(|_| self.ttfb)
                .map(|us| u32::try_from(us).unwrap_or(u32::MAX)),
            rtype: match r.method {
                Method::Get => RequestType::Basic,
                Method::Head => RequestType::Head,
                Method::Post | Method::Other => RequestType::Post,
            },
        })
    }
}

/// Each worker reads the trace again for its share. The survey read it
/// whole, so a line that fails now (the file changed) ends the share.
fn feed(path: &Path, format: Format, m: Mapping) -> TraceFeed {
    let path = path.to_path_buf();
    TraceFeed(Arc::new(move |worker, workers| {
        let records: Box<dyn Iterator<Item = Record> + Send> =
            match TraceReader::open(&path, Some(format.clone())) {
                Ok(r) => Box::new(r.map_while(Result::ok)),
                Err(_) => Box::new(std::iter::empty()),
            };
        Box::new(records.filter_map(move |r| m.request(&r, worker, workers)))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(method: Method, status: Option<u16>, implied: Option<bool>) -> Record {
        Record {
            time_us: 2_000_000,
            key: 7,
            site: 0,
            client: 0,
            size: 100,
            ttfb_us: Some(5_000),
            elapsed_us: None,
            method,
            status,
            cachable: implied,
            next_access_vtime: None,
        }
    }

    #[test]
    fn the_cachability_rule_decides_per_request() {
        let get = record(Method::Get, Some(200), Some(true));
        let uncachable = record(Method::Get, Some(302), Some(false));
        let unsaid = record(Method::Get, None, None);
        let post = record(Method::Post, Some(200), None);
        assert!(cachable(CachableRule::Trace, &get));
        assert!(!cachable(CachableRule::Trace, &uncachable));
        assert!(cachable(CachableRule::Trace, &unsaid));
        assert!(!cachable(CachableRule::Trace, &post));
        assert!(cachable(CachableRule::All, &uncachable));
        assert!(!cachable(CachableRule::All, &post));
        assert!(!cachable(CachableRule::None, &get));
    }

    #[test]
    fn every_request_goes_to_exactly_one_worker_scaled_in_time() {
        let m = Mapping {
            rule: CachableRule::Trace,
            speed: 4.0,
            servers: 3,
            ttfb: true,
        };
        let r = record(Method::Get, Some(200), Some(true));
        let taken: Vec<_> = (0..3).filter_map(|w| m.request(&r, w, 3)).collect();
        assert_eq!(taken.len(), 1);
        let t = taken[0];
        assert_eq!((t.at_us, t.ttfb_us, t.size), (500_000, Some(5_000), 100));
        assert!(t.server < 3 && t.cachable);
        let no_ttfb = Mapping { ttfb: false, ..m };
        let mut again = (0..3).filter_map(|w| no_ttfb.request(&r, w, 3));
        assert_eq!(again.next().unwrap().ttfb_us, None);
    }
}
