//! Live Prometheus metrics ([docs/metrics.md](../../docs/metrics.md)):
//! the metric families, their update from what a run already produces,
//! and a small HTTP server for `/metrics`.
//!
//! - [`RunMetrics`] (`run`): the load generator's families, updated from
//!   each merged [`IntervalStats`](cacheoff_stats::IntervalStats) the
//!   coordinator hands its sink (robots pay nothing per transaction;
//!   figures advance at interval boundaries).
//! - [`ProxyCollector`] (`proxy`): the reference proxy's counters and
//!   stores, read at scrape time through a [`cacheoff_proxy::Probe`].
//! - [`SpeMetrics`] (`spe`): the Multiplier's per-proxy families, updated
//!   from each interval record it writes.
//! - [`SecondsHistogram`] (`hist`): a classic histogram in seconds that
//!   takes a whole HDR histogram of microseconds at once.
//! - [`Format`] (`format`): the Prometheus text format 0.0.4 and
//!   OpenMetrics 1.0, chosen by the scraper's `Accept`.
//! - [`Server`] (`serve`): `GET /metrics` on a thread of its own.
//!
//! Every family lives in one `prometheus_client` [`Registry`]: the caller
//! builds it, registers what it exports, and hands it to the server.

mod format;
mod hist;
mod proxy;
mod run;
mod serve;
mod spe;

pub use format::{encode, Format};
pub use hist::{SecondsHistogram, BUCKETS_S};
pub use prometheus_client::registry::Registry;
pub use proxy::ProxyCollector;
pub use run::{RunInfo, RunMetrics};
pub use serve::{Cut, Limits, Server, MAX_REQUEST, REPLY_DEADLINE, REQUEST_DEADLINE, SLOTS};
pub use spe::SpeMetrics;
