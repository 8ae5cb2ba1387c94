//! The SPE Multiplier's run directory (docs/multiplier.md): a
//! `manifest.json` of `kind: "multiplier"` ([`Manifest`]), one
//! `intervals.jsonl` line per interval ([`Interval`]) and a `summary.json`
//! on stop ([`Summary`]). [`SpeDir`] writes them, [`open`] reads them back
//! ([`SpeRun`]); a run killed before its summary is folded from its
//! intervals ([`Summary::fold`], percentiles then upper bounds).
//!
//! Every derived figure (hit ratios, `overloaded`, `rt_diff_ms`'s means,
//! the ranking) is computed by [`Summary::derive`] alone, for the
//! Multiplier's own summary and for a folded one alike.

mod dir;

pub use dir::{is_spe, open, SpeDir, SpeRun};

use crate::Host;
use cacheoff_resources::{IntervalUsage, Resources, Traffic};
use cacheoff_stats::{Latency, LatencySet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Version of the SPE formats (`format_version` in every file); readers
/// refuse newer ones.
pub const SPE_FORMAT_VERSION: u32 = 1;
/// The manifest's `kind`.
pub const KIND: &str = "multiplier";
/// Examples kept per mismatch kind per proxy.
pub const MAX_EXAMPLES: usize = 5;

cacheoff_base::closed_set! {
    /// How a proxy's reply to a copy differs from the Collector's reply.
    Mismatch {
        WrongStatus = "wrong_status": "the status differs from the Collector's",
        Truncated = "truncated": "the body is shorter than the Collector's, or ended early",
        DifferentObject = "different_object": "another object: body length or digest differs and its validators are not older",
        Stale = "stale": "an outdated copy: older Last-Modified or validators than the Collector's",
        CorruptBody = "corrupt_body": "same length and validators, different body bytes",
        Validators = "validators": "ETag or Last-Modified differ (same body)",
        Freshness = "freshness": "Expires or Cache-Control differ",
        Error = "error": "no usable reply: connect failure, reset or malformed reply",
        Timeout = "timeout": "no whole reply in time: a connect, first-byte or idle timeout, or the copy's deadline (copy_timeout) ran out",
    }
}

cacheoff_base::closed_set! {
    /// Why the Multiplier refused a client connection or request itself
    /// (each also counts in `refused`).
    Refusal {
        ClientDenied = "client_denied": "the client's address is neither loopback nor in --allow: closed before anything was read",
        OverCapacity = "over_capacity": "--max-client-connections were open and none was waiting for a request to close: 503",
        Evicted = "evicted": "an idle or slow connection closed, at --max-client-connections, to admit a new one",
        HeaderTimeout = "header_timeout": "the request head was not whole within --client-header-timeout: 408",
        BodyTimeout = "body_timeout": "the request body fell behind --client-body-min-rate: 408",
        Malformed = "malformed": "a malformed request, or a head over max_header: 400 or 431",
        BodyTooLarge = "body_too_large": "a request body over max_request_body: 413",
        UploadsFull = "uploads_full": "the body did not fit in what --max-buffered-uploads had left: 503",
        Tunnel = "tunnel": "CONNECT: the Multiplier copies plain HTTP only: 501",
        DestDenied = "dest_denied": "a destination --allow-dest does not admit: 403",
        Loop = "loop": "the request carries this Multiplier's Via token or names its own address: 508",
    }
}

/// How a copy was served, by the Collector's stamp on the proxy's reply.
pub const VERDICTS: [&str; 3] = ["hit", "miss", "unverified"];

/// A proxy under test: its name and address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyAddr {
    pub name: String,
    pub addr: SocketAddr,
}

/// The Multiplier's settings as run, for the manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Pending copies per proxy before copies are dropped.
    pub queue: usize,
    pub conns_per_proxy: usize,
    pub copy_unsafe: bool,
    pub interval_s: f64,
    pub workers: usize,
    pub connect_timeout_ms: u64,
    pub first_byte_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    /// Longest wait for the Collector's facts of a request.
    pub facts_wait_ms: u64,
    pub client_idle_timeout_ms: u64,
    pub max_client_connections: usize,
    pub max_header: usize,
    pub max_request_body: u64,
    /// Bytes all queued copies may hold at once (each proxy an equal share).
    pub max_queued_bytes: u64,
    /// Request body bytes buffered at once across client connections.
    pub max_buffered_uploads: u64,
    /// From a copy's start (leaving the queue; connecting included) to its reply's last byte.
    pub copy_timeout_ms: u64,
    /// From a connection's start, or a request's first byte, to the end
    /// of its head.
    pub client_header_timeout_ms: u64,
    /// Bytes a second a request body must keep up (0: no pace).
    pub client_body_min_rate: u64,
    /// Clients allowed besides loopback (CIDR).
    pub allow: Vec<String>,
    /// Destination rules in force (`--allow-dest`); empty: unchecked.
    pub allow_dest: Vec<String>,
}

/// `manifest.json` of a Multiplier run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    /// Always [`KIND`].
    pub kind: String,
    pub cacheoff_version: String,
    pub git_revision: String,
    pub command_line: Vec<String>,
    /// UTC, RFC 3339 to the millisecond.
    pub started_at: String,
    pub finished_at: Option<String>,
    pub listen: SocketAddr,
    pub collector: SocketAddr,
    pub proxies: Vec<ProxyAddr>,
    pub settings: Settings,
    pub host: Host,
}

impl Manifest {
    /// The manifest of a run starting now on this machine.
    pub fn new(
        build: &crate::Build,
        command_line: &[String],
        listen: SocketAddr,
        collector: SocketAddr,
        proxies: Vec<ProxyAddr>,
        settings: Settings,
    ) -> Manifest {
        Manifest {
            format_version: SPE_FORMAT_VERSION,
            kind: KIND.into(),
            cacheoff_version: build.version.clone(),
            git_revision: build.git_revision.clone(),
            command_line: command_line.to_vec(),
            started_at: crate::now_rfc3339(),
            finished_at: None,
            listen,
            collector,
            proxies,
            settings,
            host: Host::probe(),
        }
    }
}

/// A proxy's counters over a span (an interval or the run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProxyCounts {
    /// Copies queued for the proxy.
    pub copied: u64,
    /// Copies dropped: the proxy's queue was full, by count (`queue`) or
    /// by bytes (its share of `max_queued_bytes`).
    pub dropped: u64,
    /// Unsafe requests (POST, PUT, ...) sent to the Collector only.
    pub not_copied_unsafe: u64,
    /// Copies answered with a usable reply (compared).
    pub completed: u64,
    /// Copies without a usable reply (also counted as `error` or `timeout`
    /// mismatches).
    pub errors: u64,
    /// Replies the proxy says were hits (`X-Cache`, `Cache-Status`, ...).
    pub claimed_hits: u64,
    /// Replies the Collector's stamp shows were served from the proxy.
    pub validated_hits: u64,
    /// Replies the stamp shows were fetched through the Collector.
    pub validated_misses: u64,
    /// Replies without the Collector's stamp.
    pub unverified: u64,
    /// Copies with a mismatch (each copy counted once, by its first kind).
    pub mismatches: u64,
    /// Completed copies not compared: the Collector's reply to the same
    /// request failed or did not end within the facts wait.
    pub uncompared: u64,
    /// Copies queued or in flight when the Multiplier stopped and its
    /// stop grace ran out: `copied` = `completed` + `errors` + `unfinished`.
    pub unfinished: u64,
}

impl ProxyCounts {
    pub fn add(&mut self, o: &ProxyCounts) {
        self.copied += o.copied;
        self.dropped += o.dropped;
        self.not_copied_unsafe += o.not_copied_unsafe;
        self.completed += o.completed;
        self.errors += o.errors;
        self.claimed_hits += o.claimed_hits;
        self.validated_hits += o.validated_hits;
        self.validated_misses += o.validated_misses;
        self.unverified += o.unverified;
        self.mismatches += o.mismatches;
        self.uncompared += o.uncompared;
        self.unfinished += o.unfinished;
    }
}

/// One mismatch, as an example: the URL and what was expected vs got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    /// A [`Mismatch`] name.
    pub kind: String,
    pub url: String,
    /// "expected ...; got ..." in one line.
    pub detail: String,
}

/// Mean of paired differences (the proxy's response time minus the
/// Collector's for the same request), in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiffMs {
    pub count: u64,
    pub mean: f64,
}

impl DiffMs {
    fn fold<'a>(parts: impl Iterator<Item = &'a DiffMs>) -> DiffMs {
        let (n, sum) = parts.fold((0u64, 0.0), |(n, s), d| {
            (n + d.count, s + d.mean * d.count as f64)
        });
        DiffMs {
            count: n,
            mean: if n == 0 { 0.0 } else { round3(sum / n as f64) },
        }
    }
}

/// [`DiffMs`] of hits, misses and all replies (by the validation verdict).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RtDiff {
    pub hit: DiffMs,
    pub miss: DiffMs,
    pub all: DiffMs,
}

/// One proxy over a span: counters, mismatches and times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxySpan {
    pub name: String,
    #[serde(flatten)]
    pub counts: ProxyCounts,
    /// [`Mismatch`] name → copies; kinds never seen are absent.
    #[serde(default)]
    pub mismatches_by_kind: BTreeMap<String, u64>,
    /// Response time from the copy's send to its last byte, hit and miss
    /// by the validation verdict (by the claim when unverified).
    pub rt_ms: LatencySet,
    /// Connection setup (0 on a reused connection).
    #[serde(default)]
    pub connect_ms: Latency,
    /// From the send to the reply's first byte.
    #[serde(default)]
    pub first_byte_ms: Latency,
    /// From the client's request to the copy's send (its wait in queue).
    #[serde(default)]
    pub queue_ms: Latency,
    /// Paired differences from the Collector's response time.
    #[serde(default)]
    pub rt_diff_ms: RtDiff,
    /// In an interval: examples first seen in it; in the summary: all kept
    /// (at most [`MAX_EXAMPLES`] per kind).
    #[serde(default)]
    pub examples: Vec<Example>,
}

/// The Collector's replies as the clients saw them through the Multiplier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CollectorSpan {
    /// Replies relayed to clients whole.
    pub completed: u64,
    /// Requests without a whole reply (connect failure, reset, malformed).
    pub errors: u64,
    /// Replies the Collector marked as hits (`X-Cache: HIT`).
    pub hits: u64,
    /// Response time from the request to the reply's last byte written;
    /// hit and miss by the Collector's own `X-Cache`.
    pub rt_ms: LatencySet,
}

/// One line of `intervals.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub format_version: u32,
    /// 0, 1, ...
    pub interval: u32,
    /// Seconds from the start.
    pub start_s: f64,
    pub end_s: f64,
    /// Requests from clients.
    pub requests: u64,
    /// Requests and connections the Multiplier refused itself (400, 403,
    /// 408, 501, 508, limits: every [`Refusal`]).
    #[serde(default)]
    pub refused: u64,
    pub collector: CollectorSpan,
    pub proxies: Vec<ProxySpan>,
    /// What each watched proxy spent in the interval, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, IntervalUsage>,
}

/// A proxy in `summary.json`: its span over the run plus derived figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxySummary {
    #[serde(flatten)]
    pub span: ProxySpan,
    /// Percent of completed copies the proxy claims as hits.
    pub claimed_hit_ratio: f64,
    /// Percent of completed copies the stamp shows as hits.
    pub validated_hit_ratio: f64,
    /// Copies were dropped: the proxy could not keep up.
    pub overloaded: bool,
}

/// A place in the ranking: which proxy would have served these users
/// best. Ranked: no mismatches, no drops and some completed copies, by
/// mean response time; the others follow with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rank {
    pub name: String,
    /// 1, 2, ... for ranked proxies; absent for the others.
    pub rank: Option<u32>,
    pub mean_rt_ms: f64,
    pub reason: Option<String>,
}

/// `summary.json` of a Multiplier run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub format_version: u32,
    pub kind: String,
    /// Built from the intervals of a run killed before its summary.
    #[serde(default)]
    pub folded: bool,
    pub duration_s: f64,
    /// Requests from clients.
    pub requests: u64,
    #[serde(default)]
    pub refused: u64,
    pub collector: CollectorSpan,
    pub proxies: Vec<ProxySummary>,
    pub ranking: Vec<Rank>,
    /// What each watched proxy spent over the run, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Resources>,
}

impl Summary {
    /// The summary of spans over the whole run; every derived figure is
    /// computed here.
    pub fn derive(
        duration_s: f64,
        requests: u64,
        refused: u64,
        collector: CollectorSpan,
        proxies: Vec<ProxySpan>,
    ) -> Summary {
        let pct = |n: u64, d: u64| {
            if d == 0 {
                0.0
            } else {
                round3(100.0 * n as f64 / d as f64)
            }
        };
        let proxies: Vec<ProxySummary> = proxies
            .into_iter()
            .map(|span| ProxySummary {
                claimed_hit_ratio: pct(span.counts.claimed_hits, span.counts.completed),
                validated_hit_ratio: pct(span.counts.validated_hits, span.counts.completed),
                overloaded: span.counts.dropped > 0,
                span,
            })
            .collect();
        Summary {
            format_version: SPE_FORMAT_VERSION,
            kind: KIND.into(),
            folded: false,
            duration_s: round3(duration_s),
            requests,
            refused,
            ranking: ranking(&proxies),
            collector,
            proxies,
            resources: BTreeMap::new(),
        }
    }

    /// The summary of a run from its intervals (a killed run): counters
    /// add, means are weighted, percentiles are the largest interval's.
    pub fn fold(manifest: &Manifest, intervals: &[Interval]) -> Summary {
        let duration_s = intervals.last().map_or(0.0, |i| i.end_s);
        let requests = intervals.iter().map(|i| i.requests).sum();
        let refused = intervals.iter().map(|i| i.refused).sum();
        let collector = fold_collector(intervals.iter().map(|i| &i.collector));
        let proxies = manifest
            .proxies
            .iter()
            .map(|p| {
                let spans: Vec<&ProxySpan> = intervals
                    .iter()
                    .flat_map(|i| i.proxies.iter().filter(|s| s.name == p.name))
                    .collect();
                fold_proxy(&p.name, &spans)
            })
            .collect();
        let mut s = Summary::derive(duration_s, requests, refused, collector, proxies);
        s.resources = spending(intervals, &BTreeMap::new());
        s.folded = true;
        s
    }

    pub fn proxy(&self, name: &str) -> Option<&ProxySummary> {
        self.proxies.iter().find(|p| p.span.name == name)
    }
}

fn fold_latency_set<'a>(parts: impl Iterator<Item = &'a LatencySet> + Clone) -> LatencySet {
    LatencySet {
        all: Latency::fold(parts.clone().map(|s| &s.all)),
        hit: Latency::fold(parts.clone().map(|s| &s.hit)),
        miss: Latency::fold(parts.map(|s| &s.miss)),
    }
}

fn fold_collector<'a>(parts: impl Iterator<Item = &'a CollectorSpan> + Clone) -> CollectorSpan {
    CollectorSpan {
        completed: parts.clone().map(|c| c.completed).sum(),
        errors: parts.clone().map(|c| c.errors).sum(),
        hits: parts.clone().map(|c| c.hits).sum(),
        rt_ms: fold_latency_set(parts.map(|c| &c.rt_ms)),
    }
}

fn fold_proxy(name: &str, spans: &[&ProxySpan]) -> ProxySpan {
    let mut out = ProxySpan {
        name: name.into(),
        ..ProxySpan::default()
    };
    for s in spans {
        out.counts.add(&s.counts);
        for (k, n) in &s.mismatches_by_kind {
            *out.mismatches_by_kind.entry(k.clone()).or_default() += n;
        }
        out.examples.extend(s.examples.iter().cloned());
    }
    let it = spans.iter().copied();
    out.rt_ms = fold_latency_set(it.clone().map(|s| &s.rt_ms));
    out.connect_ms = Latency::fold(it.clone().map(|s| &s.connect_ms));
    out.first_byte_ms = Latency::fold(it.clone().map(|s| &s.first_byte_ms));
    out.queue_ms = Latency::fold(it.clone().map(|s| &s.queue_ms));
    out.rt_diff_ms = RtDiff {
        hit: DiffMs::fold(it.clone().map(|s| &s.rt_diff_ms.hit)),
        miss: DiffMs::fold(it.clone().map(|s| &s.rt_diff_ms.miss)),
        all: DiffMs::fold(it.map(|s| &s.rt_diff_ms.all)),
    };
    out
}

/// Ranked proxies first (no mismatches, no drops, some completed copies;
/// fastest mean first), then the others by mean with their reason.
pub fn ranking(proxies: &[ProxySummary]) -> Vec<Rank> {
    let reason = |p: &ProxySummary| {
        let c = &p.span.counts;
        let mut why = Vec::new();
        if c.mismatches > 0 {
            why.push(format!("{} mismatches", c.mismatches));
        }
        if c.dropped > 0 {
            why.push(format!("{} copies dropped", c.dropped));
        }
        if c.completed == 0 {
            why.push("no completed copies".to_string());
        }
        (!why.is_empty()).then(|| why.join(", "))
    };
    let mut rows: Vec<Rank> = proxies
        .iter()
        .map(|p| Rank {
            name: p.span.name.clone(),
            rank: None,
            mean_rt_ms: p.span.rt_ms.all.mean,
            reason: reason(p),
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.reason.is_some(), a.mean_rt_ms)
            .partial_cmp(&(b.reason.is_some(), b.mean_rt_ms))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for (i, r) in rows.iter_mut().filter(|r| r.reason.is_none()).enumerate() {
        r.rank = Some(i as u32 + 1);
    }
    rows
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// What each watched proxy of a Multiplier run spent over the run, from
/// its intervals: a proxy's transactions are its completed copies, its
/// hits and misses those the Collector's stamp shows. Its fetches went to
/// the Collector, not to origin servers: no write amplification.
/// `sources` says what was watched for each name (else the name).
pub fn spending(
    intervals: &[Interval],
    sources: &BTreeMap<String, String>,
) -> BTreeMap<String, Resources> {
    let mut rows: BTreeMap<&str, Vec<(IntervalUsage, Traffic)>> = BTreeMap::new();
    for iv in intervals {
        for (name, usage) in &iv.resources {
            let Some(span) = iv.proxies.iter().find(|p| &p.name == name) else {
                continue;
            };
            let c = &span.counts;
            let t = Traffic {
                duration_s: iv.end_s - iv.start_s,
                xacts: c.completed,
                hits: c.validated_hits,
                misses: c.validated_misses,
                origin_bytes: 0,
                cached_bytes: 0,
            };
            rows.entry(name).or_default().push((usage.clone(), t));
        }
    }
    rows.into_iter()
        .map(|(name, r)| {
            let source = sources.get(name).map_or(name, String::as_str);
            (
                name.to_string(),
                cacheoff_resources::derive("run", source, &r, &r),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunDirError, INTERVALS_FILE};

    fn manifest() -> Manifest {
        let build = crate::Build {
            version: "0.1.0".into(),
            git_revision: "abc".into(),
        };
        let p = |name: &str, port| ProxyAddr {
            name: name.into(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        Manifest::new(
            &build,
            &["cacheoff".into(), "multiplier".into()],
            "127.0.0.1:3128".parse().unwrap(),
            "127.0.0.1:3129".parse().unwrap(),
            vec![p("a", 1), p("b", 2), p("c", 3)],
            Settings::default(),
        )
    }

    fn lat(count: u64, mean: f64) -> Latency {
        Latency {
            count,
            mean,
            p50: mean,
            p99: mean * 2.0,
            max: mean * 3.0,
        }
    }

    fn span(name: &str, copied: u64, mismatches: u64, dropped: u64, mean: f64) -> ProxySpan {
        let mut s = ProxySpan {
            name: name.into(),
            counts: ProxyCounts {
                copied,
                dropped,
                completed: copied - dropped,
                claimed_hits: 1,
                validated_hits: 1,
                mismatches,
                ..ProxyCounts::default()
            },
            ..ProxySpan::default()
        };
        if mismatches > 0 {
            s.mismatches_by_kind
                .insert(Mismatch::Stale.name().into(), mismatches);
            s.examples.push(Example {
                kind: "stale".into(),
                url: "http://o/x".into(),
                detail: "expected Last-Modified 2; got 1".into(),
            });
        }
        s.rt_ms.all = lat(copied - dropped, mean);
        s.rt_diff_ms.all = DiffMs {
            count: copied - dropped,
            mean: mean - 1.0,
        };
        s
    }

    fn interval(i: u32, spans: Vec<ProxySpan>) -> Interval {
        Interval {
            format_version: SPE_FORMAT_VERSION,
            interval: i,
            start_s: f64::from(i) * 5.0,
            end_s: f64::from(i + 1) * 5.0,
            requests: 4,
            refused: 0,
            collector: CollectorSpan {
                completed: 4,
                rt_ms: LatencySet {
                    all: lat(4, 1.0),
                    ..LatencySet::default()
                },
                ..CollectorSpan::default()
            },
            proxies: spans,
            resources: Default::default(),
        }
    }

    #[test]
    fn ranking_puts_clean_fast_proxies_first_and_says_why_others_are_not() {
        let s = Summary::derive(
            10.0,
            4,
            0,
            CollectorSpan::default(),
            vec![
                span("slow", 4, 0, 0, 9.0),
                span("wrong", 4, 2, 0, 1.0),
                span("fast", 4, 0, 0, 2.0),
                span("dropping", 4, 0, 1, 1.5),
            ],
        );
        let names: Vec<&str> = s.ranking.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["fast", "slow", "wrong", "dropping"]);
        assert_eq!(s.ranking[0].rank, Some(1));
        assert_eq!(s.ranking[1].rank, Some(2));
        assert_eq!(s.ranking[2].rank, None);
        assert_eq!(s.ranking[2].reason.as_deref(), Some("2 mismatches"));
        assert_eq!(s.ranking[3].reason.as_deref(), Some("1 copies dropped"));
        let d = s.proxy("dropping").unwrap();
        assert!(d.overloaded);
        assert_eq!(d.claimed_hit_ratio, 33.333);
    }

    #[test]
    fn summary_json_has_the_names_outside_checks_read() {
        let s = Summary::derive(
            1.0,
            4,
            0,
            CollectorSpan::default(),
            vec![span("a", 4, 1, 0, 2.0)],
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["requests"], 4);
        let p = &v["proxies"][0];
        for k in ["name", "copied", "dropped", "claimed_hits", "mismatches"] {
            assert!(p.get(k).is_some(), "{k} missing: {p}");
        }
        assert_eq!(p["mismatches_by_kind"]["stale"], 1);
        for k in ["hit", "miss", "all"] {
            for f in ["mean", "p50", "p99"] {
                assert!(p["rt_ms"][k][f].is_number(), "rt_ms.{k}.{f}");
            }
        }
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_run_reads_back_and_a_killed_one_folds_its_intervals() {
        let tmp = tempfile::tempdir().unwrap();
        let m = manifest();
        let mut dir = SpeDir::create(tmp.path(), m.clone()).unwrap();
        assert!(matches!(
            SpeDir::create(tmp.path(), m.clone()),
            Err(RunDirError::HoldsARun(_))
        ));
        dir.interval(&interval(
            0,
            vec![span("a", 4, 0, 0, 2.0), span("b", 4, 1, 0, 1.0)],
        ))
        .unwrap();
        dir.interval(&interval(
            1,
            vec![span("a", 4, 0, 0, 4.0), span("b", 4, 1, 0, 1.0)],
        ))
        .unwrap();
        // A torn last line, as a killed writer leaves it.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(tmp.path().join(INTERVALS_FILE))
            .unwrap();
        f.write_all(b"{\"format_version\":1,\"inter").unwrap();
        assert!(is_spe(tmp.path()));
        let run = open(tmp.path()).unwrap();
        assert_eq!(run.intervals.len(), 2);
        let s = &run.summary;
        assert!(s.folded);
        assert_eq!(s.requests, 8);
        assert_eq!(s.duration_s, 10.0);
        assert_eq!(s.collector.completed, 8);
        let a = s.proxy("a").unwrap();
        assert_eq!(a.span.counts.copied, 8);
        assert_eq!(a.span.rt_ms.all.mean, 3.0);
        assert_eq!(a.span.rt_ms.all.p99, 8.0);
        assert_eq!(a.span.rt_diff_ms.all.mean, 2.0);
        let b = s.proxy("b").unwrap();
        assert_eq!(b.span.mismatches_by_kind["stale"], 2);
        assert_eq!(b.span.examples.len(), 2);
        assert_eq!(s.proxy("c").unwrap().span.counts.copied, 0);
        assert_eq!(s.ranking[0].name, "a");

        let summary = Summary::derive(10.0, 8, 0, CollectorSpan::default(), vec![]);
        dir.finish(&summary).unwrap();
        let run = open(tmp.path()).unwrap();
        assert_eq!(run.summary, summary);
        assert!(run.manifest.finished_at.is_some());
    }

    #[test]
    fn newer_formats_and_other_runs_are_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let mut m = manifest();
        m.format_version = SPE_FORMAT_VERSION + 1;
        SpeDir::create(tmp.path(), m).unwrap();
        let e = open(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("newer cacheoff"), "{e}");
        let other = tempfile::tempdir().unwrap();
        let mut m = manifest();
        m.kind = "run".into();
        SpeDir::create(other.path(), m).unwrap();
        assert!(!is_spe(other.path()));
        assert!(open(other.path()).is_err());
    }

    #[test]
    fn mismatch_names_round_trip() {
        for k in Mismatch::ALL {
            assert_eq!(Mismatch::from_name(k.name()), Some(*k));
            assert!(!k.description().is_empty());
        }
        assert_eq!(Mismatch::COUNT, 9);
        for k in Refusal::ALL {
            assert_eq!(Refusal::from_name(k.name()), Some(*k));
        }
    }
}
