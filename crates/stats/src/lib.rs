//! Statistics in fixed memory and the on-disk run log.
//!
//! - [`ErrorKind`] and [`Outcome`]: the closed sets that are counted, each
//!   with a stable name and a one-line description (docs and reports reuse
//!   them).
//! - [`Snapshot`]: counters and latency histograms of one worker for one
//!   interval; snapshots add, so workers merge into intervals, intervals into
//!   phases and the total ([`Accum`]).
//! - [`Entry`]: the JSON view of an accumulated snapshot, the unit of
//!   `intervals.jsonl` and `summary.json` ([`log`]).

mod counters;
mod entry;
mod kinds;
mod snapshot;
mod span;

pub use kinds::{ErrorKind, Outcome};
pub use span::{IntervalStats, RunStats};
pub use counters::{Counter, Counters, Counts, TypeCount, MAX_CONTENT_TYPES};
pub use entry::{Entry, Latency, LatencySet, Ratio};
pub use snapshot::{Accum, Cdf, CdfSet, Distributions, Snapshot, XactRecord};
