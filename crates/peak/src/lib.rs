//! The peak finder's logic: the highest request rate a proxy sustains
//! while its response time and errors stay inside limits, found by trying
//! rates rather than guessed (as Web Polygraph's `rptmstat` held response
//! time in a window).
//!
//! - [`Limits`] (`limit`): what a step must keep, parsed from
//!   `p99<=50ms` / `mean<=0.2s` ([`RtLimit`]) and `0.1%` (errors), and
//!   the decision on one step's [`Figures`] ([`Limits::judge`]).
//! - [`find`] (`search`): grows the load exponentially from a start until
//!   a step fails (or shrinks it until one passes), bisects the bracket to
//!   [`SearchConfig::precision`], then confirms the highest passing load
//!   with a repeat step, stepping down (a bounded number of times) when
//!   the repeat fails. It calls a probe for each step and keeps the
//!   [`Step`]s; what a step is (a run through a proxy, or a model in
//!   tests) is the caller's.
//!
//! - [`cut`] (`phases`): which of a workload's phases warm the cache
//!   once and which plateau every step runs.
//! - [`search`] (`steps`): the search step by step: each step run by a
//!   [`StepRunner`], its [`figures`] judged, the record of the search
//!   (`peak.json`'s `cacheoff_rundir::peak::Peak`) kept after each.
//!
//! No I/O, no clock: the runner (`cacheoff_run::peak`: a run per step,
//! the pause between them, `peak.json` written) is the caller's.

mod limit;
mod phases;
mod search;
mod steps;

pub use limit::{parse_error_pct, Figures, LimitError, Limits, RtLimit, RtStat};
pub use phases::{cut, Cut, NoPlateau};
pub use search::{find, Outcome, Role, SearchConfig, Step, Stop};
pub use steps::{figures, search, Plan, StepRunner};
