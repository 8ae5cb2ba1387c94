//! `--metrics HOST:PORT`: live Prometheus metrics of a run (and of the
//! embedded reference proxy) for as long as a [`Metrics`] lives.

use crate::RunError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The run's families (and the embedded reference proxy's) served on
/// `/metrics`.
pub struct Metrics {
    pub run: Arc<cacheoff_metrics::RunMetrics>,
    pub server: cacheoff_metrics::Server,
}

/// After the run, how long `/metrics` waits for a scrape of the final
/// figures before the process goes on (and exits).
pub const METRICS_LINGER: Duration = Duration::from_secs(15);

impl Metrics {
    /// Starts serving on `addr`, with `proxy`'s own figures if given.
    pub fn start(
        addr: SocketAddr,
        proxy: Option<&cacheoff_proxy::Proxy>,
    ) -> Result<Metrics, RunError> {
        let mut reg = cacheoff_metrics::Registry::default();
        let run = cacheoff_metrics::RunMetrics::register(&mut reg);
        if let Some(p) = proxy {
            reg.register_collector(Box::new(cacheoff_metrics::ProxyCollector::new(p.probe())));
        }
        let server = serve_metrics(addr, reg)?;
        Ok(Metrics { run, server })
    }

    /// Waits (up to [`METRICS_LINGER`]) until a scraper has read the
    /// final figures, so that they are not lost when the process exits.
    pub fn linger(self) {
        let seen = self.server.scrapes();
        self.server.wait_for_scrape(seen, METRICS_LINGER);
    }
}

/// Starts the `/metrics` server on `addr` for `reg`, announcing it on
/// stderr (stdout's first lines are for the command's own output).
pub fn serve_metrics(
    addr: SocketAddr,
    reg: cacheoff_metrics::Registry,
) -> Result<cacheoff_metrics::Server, RunError> {
    let server = cacheoff_metrics::Server::start(addr, reg)
        .map_err(|source| RunError::Metrics { addr, source })?;
    eprintln!(
        "cacheoff: serving metrics on http://{}/metrics",
        server.addr()
    );
    Ok(server)
}
