//! Machine-readable exports of a run: one JSON document (the manifest,
//! the per-phase and total figures and every interval), or CSV tables of
//! the interval time series and the phases. `docs/export.schema.json` and
//! `docs/export-csv.md` describe them; tests hold the exports to both.

use crate::{Run, RunState};
use cacheoff_stats::Entry;
use serde::Serialize;

pub const EXPORT_FORMAT: &str = "cacheoff-export";
pub const EXPORT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    state: &'static str,
    measured_phase: Option<String>,
    manifest: &'a crate::Manifest,
    phases: Vec<Entry>,
    total: Entry,
    intervals: &'a [cacheoff_stats::IntervalRecord],
}

fn state_name(s: RunState) -> &'static str {
    match s {
        RunState::Complete => "complete",
        RunState::Interrupted => "interrupted",
        RunState::NoSummary => "no_summary",
    }
}

/// The JSON export.
pub fn json(run: &Run) -> String {
    let doc = Document {
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        state: state_name(run.state()),
        measured_phase: run.measured_phase(),
        manifest: &run.manifest,
        phases: run.phases(),
        total: run.total(),
        intervals: &run.intervals,
    };
    serde_json::to_string_pretty(&doc).expect("export serializes")
}

type Column = (&'static str, fn(&Entry) -> String);

fn f(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Columns shared by both tables, in order.
pub const ENTRY_COLUMNS: &[Column] = &[
    ("duration_s", |e| f(e.duration_s)),
    ("xacts", |e| e.xacts.to_string()),
    ("rate_xps", |e| f(e.rate_xps)),
    ("bytes", |e| e.bytes.to_string()),
    ("fill_bytes", |e| e.fill_bytes.to_string()),
    ("issued", |e| e.issued.to_string()),
    ("sent", |e| e.sent.to_string()),
    ("dhr_offered", |e| f(e.dhr.offered)),
    ("dhr_measured", |e| f(e.dhr.measured)),
    ("bhr_offered", |e| f(e.bhr.offered)),
    ("bhr_measured", |e| f(e.bhr.measured)),
    ("rt_all_mean_ms", |e| f(e.rt_ms.all.mean)),
    ("rt_all_p50_ms", |e| f(e.rt_ms.all.p50)),
    ("rt_all_p99_ms", |e| f(e.rt_ms.all.p99)),
    ("rt_hit_mean_ms", |e| f(e.rt_ms.hit.mean)),
    ("rt_hit_p99_ms", |e| f(e.rt_ms.hit.p99)),
    ("rt_miss_mean_ms", |e| f(e.rt_ms.miss.mean)),
    ("rt_miss_p99_ms", |e| f(e.rt_ms.miss.p99)),
    ("hits", |e| e.rt_ms.hit.count.to_string()),
    ("misses", |e| e.rt_ms.miss.count.to_string()),
    ("rt_uncorrected_all_mean_ms", |e| {
        f(e.rt_uncorrected_ms.all.mean)
    }),
    ("sent_late_percent", |e| f(e.sent_late_percent)),
    ("errors", |e| e.errors.total.to_string()),
    ("errors_percent", |e| f(e.errors.percent)),
    ("aborts_robot", |e| e.aborts.robot.to_string()),
    ("aborts_server", |e| e.aborts.server.to_string()),
    ("conns_open", |e| e.conns.open.to_string()),
    ("conns_opened", |e| e.conns.opened.to_string()),
];

/// Column names of `intervals.csv`.
pub fn interval_columns() -> Vec<&'static str> {
    ["interval", "phase", "start_s", "end_s", "robots", "load"]
        .into_iter()
        .chain(ENTRY_COLUMNS.iter().map(|c| c.0))
        .collect()
}

/// Column names of `phases.csv`.
pub fn phase_columns() -> Vec<&'static str> {
    ["phase", "measured"]
        .into_iter()
        .chain(ENTRY_COLUMNS.iter().map(|c| c.0))
        .collect()
}

/// A CSV field: quoted when it holds a comma, quote or line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn line(out: &mut String, fields: impl IntoIterator<Item = String>) {
    let v: Vec<String> = fields.into_iter().map(|s| field(&s)).collect();
    out.push_str(&v.join(","));
    out.push('\n');
}

/// `intervals.csv`: one row per 5 s interval.
pub fn intervals_csv(run: &Run) -> String {
    let mut out = String::new();
    line(&mut out, interval_columns().into_iter().map(String::from));
    for r in &run.intervals {
        line(
            &mut out,
            [
                r.interval.to_string(),
                r.phase.clone(),
                f(r.start_s),
                f(r.end_s),
                r.robots.to_string(),
                f(r.load),
            ]
            .into_iter()
            .chain(ENTRY_COLUMNS.iter().map(|c| (c.1)(&r.stats))),
        );
    }
    out
}

/// `phases.csv`: one row per phase, then the total.
pub fn phases_csv(run: &Run) -> String {
    let measured = run.measured_phase();
    let mut out = String::new();
    line(&mut out, phase_columns().into_iter().map(String::from));
    for e in run.phases().iter().chain(std::iter::once(&run.total())) {
        let is_measured = measured.as_deref() == Some(e.name.as_str());
        line(
            &mut out,
            [e.name.clone(), is_measured.to_string()]
                .into_iter()
                .chain(ENTRY_COLUMNS.iter().map(|c| (c.1)(e))),
        );
    }
    out
}
