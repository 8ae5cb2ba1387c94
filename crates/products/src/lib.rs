//! The products of a cache-off lineup: Squid, Varnish, nginx, Apache
//! Traffic Server and our reference proxy, each described by a product
//! file (`products/<name>.toml`, compiled in; docs/products.md has the
//! format) and driven from here: [`ProductSpec::start`] renders its
//! configuration into a run directory and starts it in a process group of
//! its own, [`Running::wait_ready`] waits until it answers,
//! [`Running::power_cut`] SIGKILLs every process of it at once (the
//! downtime test), [`Running::restart`] starts it again on the same
//! directory (disk caches survive), [`Running::stop`] stops it gracefully,
//! and [`Running::hits_from_log`] counts hits in its own access log.
//! Dropping a [`Running`] kills whatever is left of it.
//!
//! The origin address map (reverse mode) is rendered in each product's
//! own form by the pure functions of [`render`]; templates are the small
//! language of [`template`]. Installing products is not done here
//! (`ops/install-products.sh` does it); a missing binary is an error that
//! names the Debian package.

mod error;
pub mod log;
mod process;
pub mod render;
mod running;
mod spec;
mod start;
pub mod template;

pub use error::Error;
pub use log::LogCounts;
pub use process::TAG_VAR;
pub use running::Running;
pub use spec::{
    Arg, CommandSpec, CondArg, FileSpec, LogSpec, Mode, ProductSpec, ReadySpec, Requirement,
    StopSpec, PROBE_MARK,
};
pub use start::{parse_version, Disk, Settings, TlsSettings, Version};
