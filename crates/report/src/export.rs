//! Machine-readable exports of a run: one JSON document (the manifest,
//! the per-phase and total figures and every interval), or CSV tables of
//! the interval time series and the phases. `docs/schema/export.schema.json`
//! and `docs/schema/export-csv.json` describe them; tests hold the exports
//! to both.

use crate::{Run, RunState};
use cacheoff_stats::{Counter, Entry};
use serde::Serialize;

pub const EXPORT_FORMAT: &str = "cacheoff-export";
/// 2: entries carry `rt_polygraph_ms` instead of `rt_uncorrected_ms`.
pub const EXPORT_VERSION: u32 = 2;

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    state: &'static str,
    measured_phase: Option<String>,
    manifest: &'a crate::Manifest,
    phases: Vec<Entry>,
    total: Entry,
    intervals: &'a [cacheoff_rundir::IntervalRecord],
    /// What the watched product spent (docs/resources.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<cacheoff_resources::Resources>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resources_by_phase: Vec<cacheoff_resources::Resources>,
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
        resources: run.resources(),
        resources_by_phase: run.resources_by_phase(),
    };
    serde_json::to_string_pretty(&doc).expect("export serializes")
}

fn f(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A column of both tables: a counter, named as the counter table names
/// it, or another figure of the entry.
enum Column {
    Count(Counter),
    Int(&'static str, fn(&Entry) -> u64),
    Num(&'static str, fn(&Entry) -> f64),
}

impl Column {
    fn name(&self) -> &'static str {
        match self {
            Column::Count(c) => c.name(),
            Column::Int(n, _) | Column::Num(n, _) => n,
        }
    }

    fn value(&self, e: &Entry) -> String {
        match self {
            Column::Count(c) => e.raw_counts().get(*c).to_string(),
            Column::Int(_, get) => get(e).to_string(),
            Column::Num(_, get) => f(get(e)),
        }
    }
}

use Column::{Count, Int, Num};

/// Columns shared by both tables, in order (outside tools read them:
/// only ever add at the end).
const ENTRY_COLUMNS: &[Column] = &[
    Num("duration_s", |e| e.duration_s),
    Count(Counter::Xacts),
    Num("rate_xps", |e| e.rate_xps),
    Count(Counter::Bytes),
    Count(Counter::FillBytes),
    Count(Counter::Issued),
    Count(Counter::Sent),
    Num("dhr_offered", |e| e.dhr.offered),
    Num("dhr_measured", |e| e.dhr.measured),
    Num("bhr_offered", |e| e.bhr.offered),
    Num("bhr_measured", |e| e.bhr.measured),
    Num("rt_all_mean_ms", |e| e.rt_ms.all.mean),
    Num("rt_all_p50_ms", |e| e.rt_ms.all.p50),
    Num("rt_all_p99_ms", |e| e.rt_ms.all.p99),
    Num("rt_hit_mean_ms", |e| e.rt_ms.hit.mean),
    Num("rt_hit_p99_ms", |e| e.rt_ms.hit.p99),
    Num("rt_miss_mean_ms", |e| e.rt_ms.miss.mean),
    Num("rt_miss_p99_ms", |e| e.rt_ms.miss.p99),
    // Replies of every request type, unlike the counter `basic_hits`.
    Int("hits", |e| e.rt_ms.hit.count),
    Int("misses", |e| e.rt_ms.miss.count),
    // In the place of the send clock's mean, which it replaced.
    Num("rt_polygraph_all_mean_ms", |e| e.rt_polygraph_ms.all.mean),
    Num("sent_late_percent", |e| e.sent_late_percent),
    Int("errors", |e| e.errors.total),
    Num("errors_percent", |e| e.errors.percent),
    Count(Counter::AbortsRobot),
    Count(Counter::AbortsServer),
    Int("conns_open", |e| e.conns.open),
    Count(Counter::ConnsOpened),
    Num("rt_polygraph_all_p50_ms", |e| e.rt_polygraph_ms.all.p50),
    Num("rt_polygraph_all_p99_ms", |e| e.rt_polygraph_ms.all.p99),
    Num("rt_polygraph_hit_mean_ms", |e| e.rt_polygraph_ms.hit.mean),
    Num("rt_polygraph_miss_mean_ms", |e| e.rt_polygraph_ms.miss.mean),
    Num("dhr_ideal", |e| e.dhr.ideal),
    Num("bhr_ideal", |e| e.bhr.ideal),
];

/// Column names of `intervals.csv`.
pub fn interval_columns() -> Vec<&'static str> {
    ["interval", "phase", "start_s", "end_s", "robots", "load"]
        .into_iter()
        .chain(ENTRY_COLUMNS.iter().map(Column::name))
        .collect()
}

/// Column names of `phases.csv`.
pub fn phase_columns() -> Vec<&'static str> {
    ["phase", "measured"]
        .into_iter()
        .chain(ENTRY_COLUMNS.iter().map(Column::name))
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
            .chain(ENTRY_COLUMNS.iter().map(|c| c.value(&r.stats))),
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
                .chain(ENTRY_COLUMNS.iter().map(|c| c.value(e))),
        );
    }
    out
}
