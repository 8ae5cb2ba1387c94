//! The live console: what a run is about to do, one line per interval
//! while it goes, and a table of phases at the end. Response times are
//! shown on both clocks, each named.

use cacheoff_agent::Via;
use cacheoff_proxy::{Proxy, ProxyStats};
use cacheoff_rundir::{IntervalRecord, Summary};
use cacheoff_stats::{Entry, RtClock};
use cacheoff_workload::Workload;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

/// Where robots send, as the console says it.
pub fn via(via: &Via) -> String {
    match via {
        Via::Direct => "direct (no proxy)".into(),
        Via::Proxy(p) => format!("via proxy {p}"),
        Via::Surrogate(p) => format!("to surrogate {p}"),
    }
}

/// The line a run starts with: the workload, its size and rate, the
/// target and the run directory.
pub fn run_line(w: &Workload, to: Via, dir: &Path) -> String {
    format!(
        "cacheoff {} run {}: {} robots, {} servers, {}, {} -> {}",
        env!("CARGO_PKG_VERSION"),
        w.name,
        w.robots.count,
        w.servers.count,
        w.peak_rate
            .map_or("closed-loop".to_string(), |r| format!("peak {r}")),
        via(&to),
        dir.display()
    )
}

/// The per-interval console line; `xacts_so_far` counts the whole run.
pub fn interval_line(r: &IntervalRecord, xacts_so_far: u64) -> String {
    let s = &r.stats;
    format!(
        "{:>7.1}s  {:<6} {:>11} {:>11.1} {:>9.2} {:>9.2} {:>8.1}% of {:>5.1}% {:>9} {:>10}",
        r.end_s,
        r.phase,
        xacts_so_far,
        s.rate_xps,
        s.rt_ms.all.mean,
        s.rt_polygraph_ms.all.mean,
        s.dhr.measured,
        s.dhr.offered,
        s.errors.total,
        s.conns.open,
    )
}

/// What each response-time column's mark means.
fn legend() -> String {
    RtClock::ALL
        .iter()
        .map(|&c| format!("{}: {}", mark(c), c.description()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The mark of a response-time column on `clock`.
fn mark(clock: RtClock) -> &'static str {
    match clock {
        RtClock::Intended => "(i)",
        RtClock::Polygraph => "(c)",
    }
}

/// The console header matching [`interval_line`], with a legend of the
/// response-time columns.
pub fn header() -> &'static str {
    static HEADER: OnceLock<String> = OnceLock::new();
    HEADER.get_or_init(|| {
        format!(
            "mean response time in ms, {}\n   time  phase         xacts   replies/s {:>9} {:>9}  hit ratio (offered)    errors open conns",
            legend(),
            format!("rt{}", mark(RtClock::Intended)),
            format!("rt{}", mark(RtClock::Polygraph)),
        )
    })
}

fn phase_row(e: &Entry) -> String {
    let mut row = format!(
        "{:<8} {:>8.1}s {:>10} {:>10.1}",
        e.name, e.duration_s, e.xacts, e.rate_xps
    );
    for c in RtClock::ALL {
        let rt = e.rt(*c);
        row.push_str(&format!(
            " {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            rt.all.mean, rt.hit.mean, rt.miss.mean, rt.all.p99
        ));
    }
    row.push_str(&format!(
        " {:>6.1}/{:<6.1} {:>6.1}/{:<6.1} {:>8} {:>7.3}%",
        e.dhr.measured,
        e.dhr.offered,
        e.bhr.measured,
        e.bhr.offered,
        e.errors.total,
        e.errors.percent,
    ));
    row
}

/// The end-of-run table: one row per phase and the total, response times
/// on both clocks side by side.
pub fn summary_table(s: &Summary) -> String {
    let mut out = format!("{:<8} {:>9} {:>10} {:>10}", "", "", "", "");
    for c in RtClock::ALL {
        out.push_str(&format!(
            " {:<39}",
            format!("response time, ms {}", mark(*c))
        ));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out.push_str(&format!(
        "{:<8} {:>9} {:>10} {:>10}",
        "phase", "duration", "xacts", "replies/s"
    ));
    for _ in RtClock::ALL {
        out.push_str(&format!(
            " {:>9} {:>9} {:>9} {:>9}",
            "all", "hit", "miss", "p99"
        ));
    }
    out.push_str(&format!(
        " {:>13} {:>13} {:>8} {:>8}\n",
        "DHR meas/off", "BHR meas/off", "errors", "err %"
    ));
    for e in s.phases.iter().chain(std::iter::once(&s.total)) {
        out.push_str(&phase_row(e));
        out.push('\n');
    }
    out.push_str(&legend());
    out.push('\n');
    if let Some(m) = &s.measured_phase {
        out.push_str(&format!("measured phase: {m}"));
    }
    if s.interrupted {
        out.push_str("  (run interrupted: figures cover the part that ran)");
    }
    out.push('\n');
    if let Some(line) = claims_line(&s.total) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// What the proxy claimed against what the echo showed, when it claimed
/// anything (docs/run-directory.md, "What proxies claim").
fn claims_line(e: &Entry) -> Option<String> {
    let c = e.counts.as_ref()?;
    let claimed = e.xacts.saturating_sub(c.claim_none);
    if claimed == 0 {
        return None;
    }
    let wrong = c.claim_hit_was_miss + c.claim_miss_was_hit;
    Some(format!(
        "proxy's own claims (Cache-Status, X-Cache, Via, Age): {claimed} replies claimed, {wrong} false ({} hits that were misses, {} misses that were hits)",
        c.claim_hit_was_miss, c.claim_miss_was_hit
    ))
}

/// The reference proxy's counters, after a run or when it stops.
pub fn counters_line(p: &Proxy) -> String {
    let s: &ProxyStats = p.stats();
    let g = ProxyStats::get;
    let (objects, bytes) = p.memory_usage();
    format!(
        "reference proxy: {} requests, {} hits ({} collapsed), {} misses ({} taking over a late collapsed fetch), {} revalidated, {} refused, {} origin errors; {} objects ({}) in memory",
        g(&s.requests),
        g(&s.hits),
        g(&s.collapsed),
        g(&s.misses),
        g(&s.collapse_takeovers),
        g(&s.revalidated),
        g(&s.client_errors),
        g(&s.origin_errors),
        objects,
        cacheoff_base::Bytes(bytes)
    )
}

/// `e` and its sources, each after `: ` (as `{:#}` of an
/// `anyhow::Error` says it).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Prints to stdout, ignoring a closed pipe.
pub fn print(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{text}");
    let _ = o.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_stats::{Accum, Outcome, Snapshot, XactRecord};
    use cacheoff_workload::RequestType;

    /// A phase of 10 misses, 8 ms from their intended start and 3 ms from
    /// their connection.
    fn entry(name: &str) -> Entry {
        let mut s = Snapshot::default();
        for _ in 0..10 {
            s.record_send(10);
            s.record_xact(&XactRecord {
                outcome: Outcome::Miss,
                fills_cache: true,
                bytes: 100,
                full_body: true,
                rtype: RequestType::Basic,
                ctype: 0,
                offered_hit: false,
                ideal_hit: false,
                rt_corrected_us: 8000,
                rt_polygraph_us: 3000,
            });
        }
        let mut a = Accum::default();
        a.add_interval(&s, 5.0);
        a.entry(name, &["object".to_string()])
    }

    /// The column of `text`'s line `row` under `head`'s `at`-th occurrence
    /// in line `head_line`, right-aligned as the tables are.
    fn under(text: &str, head_line: usize, head: &str, at: usize, row: usize) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let end = lines[head_line]
            .match_indices(head)
            .nth(at)
            .map(|(i, _)| i + head.len())
            .unwrap();
        let line = lines[row];
        let start = line[..end].rfind(' ').unwrap() + 1;
        line[start..end].to_string()
    }

    #[test]
    fn both_clocks_are_shown_side_by_side_and_named() {
        let summary = Summary {
            format: cacheoff_rundir::SUMMARY_FORMAT.into(),
            version: cacheoff_rundir::FORMAT_VERSION,
            workload: "w".into(),
            interrupted: false,
            measured_phase: Some("meas".into()),
            phases: vec![entry("meas")],
            total: entry("total"),
            distributions: None,
            ceiling: None,
            plan_digest: None,
            agents: None,
            partial: None,
            resources: None,
            resources_by_phase: Vec::new(),
        };
        let t = summary_table(&summary);
        // Line 0 names the clocks, line 1 the columns, line 2 is `meas`.
        assert!(t.lines().next().unwrap().contains("response time, ms (i)"));
        assert!(t.lines().next().unwrap().contains("response time, ms (c)"));
        assert_eq!(under(&t, 1, "all", 0, 2), "8.00");
        assert_eq!(under(&t, 1, "all", 1, 2), "3.00");
        assert_eq!(under(&t, 1, "miss", 1, 2), "3.00");
        for c in RtClock::ALL {
            assert!(t.contains(c.description()), "{t}");
            assert!(header().contains(c.description()));
        }

        let r = IntervalRecord {
            version: cacheoff_rundir::FORMAT_VERSION,
            interval: 0,
            phase: "meas".into(),
            start_s: 0.0,
            end_s: 5.0,
            robots: 1,
            load: 1.0,
            stats: entry("meas"),
            resources: None,
        };
        let line = interval_line(&r, 10);
        let h = header().lines().nth(1).unwrap();
        let text = format!("{h}\n{line}");
        assert_eq!(under(&text, 0, "rt(i)", 0, 1), "8.00");
        assert_eq!(under(&text, 0, "rt(c)", 0, 1), "3.00");
        assert!(h.contains("hit ratio (offered)"));
    }

    #[test]
    fn claims_are_summed_up_only_when_the_proxy_claimed_something() {
        let mut e = entry("total");
        let mut counts = e.counts.unwrap_or_default();
        counts.claim_none = e.xacts;
        e.counts = Some(counts);
        assert_eq!(claims_line(&e), None, "nothing claimed");
        counts.claim_none = 2;
        counts.claim_hit_was_miss = 3;
        e.counts = Some(counts);
        let line = claims_line(&e).unwrap();
        assert!(
            line.contains(&format!("{} replies claimed, 3 false", e.xacts - 2)),
            "{line}"
        );
    }
}
