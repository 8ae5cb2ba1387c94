//! `cacheoff conform`: an HTTP caching conformance suite (RFC 9111, RFC
//! 9110's caching sections, RFC 5861, RFC 9213) run against any proxy.
//!
//! - [`Origin`] (`origin`): the suite's own scripted origin server; each
//!   check registers replies ([`Reply`]) for its own paths (under a run
//!   nonce, so no check and no earlier run can answer another's) and reads
//!   back what reached the origin ([`Seen`]). It is the codebase's one
//!   scripted origin: `crates/testkit` hands it to the other crates'
//!   tests, with a fallback script for any path and replies a script
//!   writes itself ([`Writer`]).
//! - [`Reader`] (`wire`): HTTP/1.1 messages read off a blocking socket
//!   with `crates/http`'s codec, for the origin, the client and the
//!   tests' client.
//! - `client`: one request at a time through the proxy under test
//!   ([`Target`], [`Mode`]: forward in absolute form, or a surrogate with
//!   the origin's `Host`).
//! - [`Check`] (`check`): a check's id, RFC section and function from its
//!   [`Ctx`] to an [`Outcome`] (`pass` / `fail` / `optional`); the
//!   checks themselves live in `checks`, one module per subject.
//! - [`run`] runs every check that applies to the mode at once, each on
//!   its own thread, into a [`Report`] (`report`: JSON and the table).

mod check;
mod checks;
mod client;
mod origin;
mod report;
mod wire;

pub use check::{Applies, Check, Ctx, Outcome, Verdict};
pub use client::{Mode, Target};
pub use origin::{Origin, Reply, Script, Seen, Writer};
pub use report::{CheckResult, Report};
pub use wire::{Headers, Reader};

use std::sync::Arc;

/// Where the origin listens by default in reverse mode: the surrogate
/// under test must be configured to route its `Host` there.
pub const DEFAULT_ORIGIN: &str = "127.0.0.1:18080";

/// Every check of the suite, in the docs table's order.
pub fn catalog() -> Vec<Check> {
    checks::all()
}

/// Runs the suite's checks for `target.mode` against `target.proxy`, with
/// `origin` (listening on `target.origin`) behind it.
pub fn run(target: Target, origin: Arc<Origin>) -> Report {
    let nonce = format!(
        "/conform-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let started = std::time::Instant::now();
    let checks: Vec<Check> = catalog()
        .into_iter()
        .filter(|c| c.applies_to(target.mode))
        .collect();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = checks
            .iter()
            .map(|chk| {
                let ctx = Ctx::new(
                    target.clone(),
                    origin.clone(),
                    format!("{nonce}/{}", chk.id),
                );
                s.spawn(move || {
                    let o = (chk.run)(&ctx);
                    CheckResult::new(chk, o, ctx.take_log())
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(&checks)
            .map(|(h, chk)| {
                h.join().unwrap_or_else(|_| {
                    CheckResult::new(chk, check::fail("the check panicked"), Vec::new())
                })
            })
            .collect()
    });
    Report::new(target.mode, results, started.elapsed())
}
