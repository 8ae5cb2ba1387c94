//! Foundations shared by every cacheoff crate.
//!
//! - [`units`]: [`Bytes`], [`Rate`] and [`Dur`], parsed from and printed as
//!   human units (`13KB`, `400/s`, `2min`); serde uses the same text form.
//! - [`rng`]: deterministic random streams derived from the run seed
//!   ([`rng::stream`]) and stateless hashing of ids ([`rng::mix64`]), so an
//!   object's properties follow from its id alone.
//! - [`clock`]: wall-clock time as an input ([`Clock`], [`ManualClock`]).
//! - [`XactId`]: transaction ids, unique within a run.
//! - [`closed_set!`]: enums of named things from one table; [`RequestType`]
//!   is one (a workload fact that robots, stats and reports share).

pub mod clock;
mod closed_set;
mod ids;
mod request_type;
pub mod rng;
pub mod units;

pub use clock::{Clock, ManualClock, SystemClock};
pub use ids::XactId;
pub use request_type::RequestType;
/// For [`closed_set!`]'s expansion in other crates.
#[doc(hidden)]
pub use serde;
pub use units::{Bytes, Dur, Rate, UnitError};
