//! `cacheoff conform`: the HTTP caching conformance suite against a
//! forward proxy or a surrogate, as a table or one JSON object
//! (docs/conformance.md). The checks are `cacheoff_conform`'s.

use crate::Failure;
use anyhow::Context;
use cacheoff_conform::{Mode, Origin, Target, DEFAULT_ORIGIN};
use clap::Args;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("under_test").required(true).args(["proxy", "reverse"])),
    after_help = "Exit status: 0 no check failed, 1 a check failed, 2 cannot run (nothing answering, the origin address taken)."
)]
pub struct ConformArgs {
    /// A forward proxy under test: requests name the suite's origin in
    /// absolute form.
    #[arg(long, value_name = "HOST:PORT")]
    pub proxy: Option<String>,
    /// A surrogate (reverse proxy) under test, configured to fetch from
    /// --origin: requests carry that origin's Host.
    #[arg(long, value_name = "HOST:PORT")]
    pub reverse: Option<String>,
    /// Where the suite's origin listens. Default: 127.0.0.1:18080 with
    /// --reverse (where the surrogate must route), a free loopback port
    /// with --proxy.
    #[arg(long, value_name = "HOST:PORT")]
    pub origin: Option<String>,
    /// The origin's name in the surrogate's configuration, sent as Host
    /// with --reverse (default: the --origin address).
    #[arg(long, value_name = "NAME", requires = "reverse")]
    pub host: Option<String>,
    /// Print one JSON object (checks with id, section, result and the
    /// exchange; passed, failed) instead of the table.
    #[arg(long)]
    pub json: bool,
}

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
