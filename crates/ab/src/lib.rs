//! Whether a difference between two proxies' runs is real: the logic
//! behind `cacheoff ab` (rounds of paired runs) and the intervals of
//! `cacheoff compare` (two single runs). See docs/ab.md for the method.
//!
//! - [`FIGURES`], [`value`], [`series`] (`figures`): the headline figures
//!   and how each is read from a `summary.json` phase entry (or its
//!   top-level `resources`) and from `intervals.jsonl` rows, as JSON
//!   values; a span without samples for a figure gives none.
//! - [`order`], [`Side`] (`report`): the ABBA order of an experiment's
//!   runs, which cancels linear drift.
//! - [`rounds`], [`batches`] (`interval`): a [`FigureResult`], the
//!   interval for B − A and its [`Verdict`]: paired t over rounds, or
//!   Welch's t on batch means of two interval series.
//! - [`judge_rounds`], [`judge_runs`] (`judge`): every figure at once,
//!   from an experiment's `summary.json`s, or from two runs' interval
//!   rows ([`RunSeries`]).
//! - [`AbReport`], [`report_table`] (`report`): the experiment's record
//!   and its plain-text table.
//! - [`experiment`] (`experiment`): the rounds run in order, each run by
//!   a [`RoundRunner`], then judged into the [`AbReport`].
//! - [`t_quantile`] (`tdist`): Student's t quantiles for any real df.
//!
//! No I/O: the runner (`cacheoff ab`'s) runs the runs and reads them back.

mod experiment;
mod figures;
mod interval;
mod judge;
mod report;
mod tdist;

pub use experiment::{experiment, run_name, Plan, RoundRunner, LEVEL};
pub use figures::{figure, measured, series, value, Figure, FIGURES};
pub use interval::{batch_count, batch_means, batches, rounds, FigureResult, Verdict};
pub use judge::{judge_rounds, judge_runs, RunSeries};
pub use report::{order, report_table, AbReport, RoundRuns, Side, METHOD_BATCHES, METHOD_PAIRED};
pub use tdist::{normal_quantile, t_quantile};
