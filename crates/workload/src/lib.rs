//! The pure workload model: what robots ask for, when, and what origin
//! servers answer. No I/O and no clocks: everything is a function of the
//! run seed, an object id, or a time offset passed in.
//!
//! - [`Workload`] is the fully resolved description of a run (it is written
//!   into the run manifest). [`load`] reads a workload file (TOML) or a
//!   built-in one (the files in `workloads/`, compiled in), applies the
//!   command-line [`Overrides`] (one table of them, [`Overrides::PARAMS`])
//!   and scaling rules, and validates it.
//!   [`files`] says which files a workload may read (its table files, a
//!   `.pg` file's includes) and how much; [`ranges`] holds the range of
//!   every number a workload holds, which validation checks.
//! - [`Dist`] samples sizes, times and counts.
//! - [`ObjectSpace`] maps an object id to its size, cachability, server and
//!   body, so robots and servers agree without talking.
//! - [`Phase`] and [`Schedule`] give the load factor at any moment and the
//!   5-second interval boundaries.

mod addrmap;
mod content;
mod describe;
mod dist;
mod expect;
mod file;
pub mod files;
mod lifecycle;
mod model;
mod objects;
mod overrides;
mod plan;
mod popularity;
pub mod ranges;
mod raw;
mod schedule;
mod traced;
mod validate;
mod world;

pub use addrmap::{server_name, AddrMap, AddrMapError, ZONE};
pub use cacheoff_base::RequestType;
pub use content::{content_set, ContentType, Embeds, Extension, Mix};
pub use describe::describe;
pub use dist::{Dist, DistError, Quantity, MAX_TABLE_ENTRIES};
pub use expect::{expected_offered, Offered};
pub use file::{builtin_names, load, load_text, load_with, LoadError};
pub use lifecycle::{LifeCycle, ObjectTimes};
pub use model::{
    Aborts, Arrivals, HttpVersion, LinkConfig, RequestMix, RobotConfig, ServerConfig, Timeouts,
    Workload,
};
pub use objects::{
    embedded_oid, split_oid, ObjectInfo, ObjectSpace, Place, MAX_EMBEDDED, MAX_GALAXIES,
    MAX_SERVERS, MAX_TYPES,
};
pub use overrides::{Overrides, Param};
pub use plan::{choose_request, digest, ArrivalTimes, Plan, PlanDigest, Planned};
pub use popularity::{HotSet, PopModel, Popularity};
pub use raw::PeakRate;
pub use schedule::{Factors, FillGoal, Interval, Load, Phase, Schedule};
pub use traced::{TraceBook, TracedRequest};
pub use validate::WorkloadError;
pub use world::{Galaxy, Pick};
