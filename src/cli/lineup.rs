//! `cacheoff lineup`'s arguments (the command is `lineup_cmd`, the
//! cache-off itself `lineup`).

use super::PglArgs;
use cacheoff_products::Mode;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct LineupArgs {
    /// The lineup file (TOML, docs/lineup.md); without it, the products
    /// named with --product.
    #[arg(value_name = "LINEUP.toml")]
    pub file: Option<PathBuf>,
    /// Where the lineup's workload files may read their includes and
    /// tables from (its workloads may be `.pg` files).
    #[command(flatten)]
    pub pgl: PglArgs,
    /// A product (a product file's name: reference, squid, varnish, nginx,
    /// trafficserver, or a path) in one mode, or in every mode it has;
    /// repeat for more. Replaces the file's products.
    #[arg(long = "product", value_name = "NAME[:forward|reverse]", value_parser = parse_product_arg)]
    pub products: Vec<(String, Option<Mode>)>,
    /// Peak request rate of every run.
    #[arg(long, value_name = "RATE")]
    pub peak_rate: Option<String>,
    /// Cache size of every product (memory, and disk where it has one).
    #[arg(long, value_name = "SIZE")]
    pub cache_size: Option<String>,
    /// Compress time: the workloads' plateaus last this long.
    #[arg(long, value_name = "TIME")]
    pub plateau: Option<String>,
    /// Robots speak HTTPS: to the surrogates (with the lineup's test CA,
    /// products whose file says `tls = true`), through CONNECT tunnels of
    /// the forward proxies, to the origin servers in the baselines.
    #[arg(long)]
    pub tls: bool,
    /// HTTP version robots speak (1.1 or 2).
    #[arg(long, value_name = "VERSION")]
    pub http: Option<String>,
    /// Find each product's peak first (`cacheoff peak` with this
    /// response-time limit, e.g. 'p99<=50ms'): it becomes the product's
    /// peak rate.
    #[arg(long, value_name = "STAT<=TIME")]
    pub find_peak: Option<String>,
    /// Skip the HTTP caching conformance suite (`cacheoff conform`).
    #[arg(long)]
    pub no_conform: bool,
    /// Skip the downtime test.
    #[arg(long)]
    pub no_downtime: bool,
    /// Skip the MSL test.
    #[arg(long)]
    pub no_msl: bool,
    /// Simultaneous Proxy Evaluation instead of one product after another:
    /// every product (forward, with the Collector as its parent) gets a
    /// copy of every request of one run through the SPE Multiplier, which
    /// compares and times their replies (no downtime or MSL test).
    #[arg(long)]
    pub spe: bool,
    /// Worker threads of each run (default: one per core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Output directory (default: lineups/<timestamp>).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print only each run's summary, not a line per interval.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Serve live Prometheus metrics on http://HOST:PORT/metrics while
    /// running (docs/metrics.md).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<SocketAddr>,
}

/// `--product NAME[:forward|reverse]`.
pub fn parse_product_arg(s: &str) -> Result<(String, Option<Mode>), String> {
    match s.split_once(':') {
        None if !s.is_empty() => Ok((s.to_string(), None)),
        Some((name, mode)) if !name.is_empty() => {
            match Mode::ALL.into_iter().find(|m| m.name() == mode) {
                Some(m) => Ok((name.to_string(), Some(m))),
                None => Err(format!("{s:?}: the mode is forward or reverse")),
            }
        }
        _ => Err(format!("{s:?}: expected NAME[:forward|reverse]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_is_a_name_and_maybe_a_mode() {
        assert_eq!(
            parse_product_arg("squid:reverse"),
            Ok(("squid".into(), Some(Mode::Reverse)))
        );
        assert_eq!(parse_product_arg("squid"), Ok(("squid".into(), None)));
        assert!(parse_product_arg("squid:up").is_err());
        assert!(parse_product_arg(":forward").is_err());
        assert!(parse_product_arg("").is_err());
    }
}
