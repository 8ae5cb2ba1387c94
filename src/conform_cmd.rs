//! `cacheoff conform`: the HTTP caching conformance suite against a
//! forward proxy or a surrogate, as a table or one JSON object
//! (docs/conformance.md). The checks are `cacheoff_conform`'s.

use crate::cli::ConformArgs;
use crate::Failure;
use anyhow::Context;
use cacheoff_conform::{Mode, Origin, Target, DEFAULT_ORIGIN};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

fn resolve(flag: &str, addr: &str) -> Result<SocketAddr, Failure> {
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("{flag} {addr}: not a HOST:PORT"))
        .map_err(Failure::usage)
}

pub fn run(a: &ConformArgs) -> Result<(), Failure> {
    let (mode, proxy) = match (&a.proxy, &a.reverse) {
        (Some(p), None) => (Mode::Forward, resolve("--proxy", p)?),
        (None, Some(r)) => (Mode::Reverse, resolve("--reverse", r)?),
        _ => {
            return Err(Failure::usage(anyhow::anyhow!(
                "give one of --proxy and --reverse"
            )))
        }
    };
    let origin = match (&a.origin, mode) {
        (Some(o), _) => resolve("--origin", o)?,
        (None, Mode::Reverse) => resolve("--origin", DEFAULT_ORIGIN)?,
        (None, Mode::Forward) => SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    cacheoff_run::preflight::check(proxy)?;
    let origin = Origin::bind(origin)
        .with_context(|| format!("the suite's origin cannot listen on {origin}"))
        .map_err(Failure::usage)?;
    let target = Target {
        mode,
        proxy,
        origin: origin.addr(),
        host: a.host.clone(),
    };
    if !a.json {
        eprintln!(
            "conformance of the {} proxy at {proxy}, origin at {}",
            mode.name(),
            target.origin
        );
    }
    let report = cacheoff_conform::run(target, Arc::new(origin));
    match a.json {
        true => println!("{}", report.json()),
        false => print!("{}", report.table()),
    }
    match report.failed {
        0 => Ok(()),
        n => Err(Failure::run(anyhow::anyhow!(
            "{n} of {} conformance checks failed",
            report.checks.len()
        ))),
    }
}
