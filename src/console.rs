//! The live console: one line per interval while a run goes, and a table of
//! phases at the end.

use cacheoff_rundir::{IntervalRecord, Summary};
use cacheoff_stats::Entry;
use std::io::Write;

/// The per-interval console line; `xacts_so_far` counts the whole run.
pub fn interval_line(r: &IntervalRecord, xacts_so_far: u64) -> String {
    let s = &r.stats;
    format!(
        "{:>7.1}s  {:<6} {:>11} {:>11.1} {:>10.2}ms {:>8.1}% of {:>5.1}% {:>9} {:>10}",
        r.end_s,
        r.phase,
        xacts_so_far,
        s.rate_xps,
        s.rt_ms.all.mean,
        s.dhr.measured,
        s.dhr.offered,
        s.errors.total,
        s.conns.open,
    )
}

/// The console header matching [`interval_line`].
pub fn header() -> &'static str {
    "   time  phase         xacts   replies/s  mean resp.  hit ratio (offered)    errors open conns"
}

fn phase_row(e: &Entry) -> String {
    format!(
        "{:<8} {:>8.1}s {:>10} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>6.1}/{:<6.1} {:>6.1}/{:<6.1} {:>8} {:>7.3}%",
        e.name,
        e.duration_s,
        e.xacts,
        e.rate_xps,
        e.rt_ms.all.mean,
        e.rt_ms.hit.mean,
        e.rt_ms.miss.mean,
        e.rt_ms.all.p99,
        e.dhr.measured,
        e.dhr.offered,
        e.bhr.measured,
        e.bhr.offered,
        e.errors.total,
        e.errors.percent,
    )
}

/// The end-of-run table: one row per phase and the total.
pub fn summary_table(s: &Summary) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<8} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>13} {:>13} {:>8} {:>8}\n",
        "phase",
        "duration",
        "xacts",
        "replies/s",
        "rt ms",
        "hit ms",
        "miss ms",
        "p99 ms",
        "DHR meas/off",
        "BHR meas/off",
        "errors",
        "err %"
    ));
    for e in s.phases.iter().chain(std::iter::once(&s.total)) {
        out.push_str(&phase_row(e));
        out.push('\n');
    }
    if let Some(m) = &s.measured_phase {
        out.push_str(&format!("measured phase: {m}"));
    }
    if s.interrupted {
        out.push_str("  (run interrupted: figures cover the part that ran)");
    }
    out.push('\n');
    out
}

/// Prints to stdout, ignoring a closed pipe.
pub fn print(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{text}");
    let _ = o.flush();
}
