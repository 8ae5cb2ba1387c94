//! Statistics in fixed memory, and every figure derived from them.
//!
//! - [`ErrorKind`] and [`Outcome`]: the closed sets that are counted, each
//!   with a stable name and a one-line description (docs and reports reuse
//!   them); [`RtClock`]: the two clocks response times read (from the
//!   intended start, and from the connection as Web Polygraph).
//! - [`Counter`], [`Counters`], [`Counts`]: the counter table
//!   (`counters.rs`), each counter named and described once.
//! - [`Snapshot`]: counters and latency histograms of one worker for one
//!   interval; snapshots add, so workers merge into intervals, intervals into
//!   phases and the total ([`Accum`]).
//! - [`Entry`]: the JSON view of a span (the unit of the run directory's
//!   files); `Entry::new` and `Entry::fold` derive every figure in one
//!   place.
//! - [`IntervalStats`] and [`RunStats`]: what the run-time hands over,
//!   before any file format.

mod counters;
mod entry;
mod firsts;
mod kinds;
mod snapshot;
mod span;
mod wire;

pub use counters::{Counter, Counters, Counts, TypeCount, MAX_CONTENT_TYPES};
pub use entry::{Entry, Latency, LatencySet, Ratio};
pub use firsts::Firsts;
pub use kinds::{ErrorKind, Outcome, RtClock};
pub use snapshot::{Accum, Cdf, CdfSet, Distributions, Snapshot, XactRecord};
pub use span::{IntervalStats, RunStats};
pub use wire::{WireError, WireSnapshot};
