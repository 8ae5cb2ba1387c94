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

mod kinds;
pub mod log;
mod snapshot;

pub use kinds::{ErrorKind, Outcome};
pub use log::{IntervalRecord, Summary, FORMAT_VERSION};
pub use snapshot::{
    Accum, Cdf, CdfSet, Distributions, Entry, Latency, LatencySet, Ratio, Snapshot, TypeCount,
    XactRecord, MAX_CONTENT_TYPES,
};
