//! Proxy settings: every limit and timeout with its default, in one place.

use crate::fault::Faults;
use cacheoff_access::DestRule;
use cacheoff_access::IpNet;
use cacheoff_base::{Clock, SystemClock};
use cacheoff_cache::{Policy, Targeted};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

cacheoff_base::closed_set! {
    /// How the proxy delimits reply bodies to its clients.
    ReplyFraming {
        Length = "length": "Content-Length when the length is known; otherwise chunked to HTTP/1.1 clients and close-delimited to HTTP/1.0 ones",
        Chunked = "chunked": "Transfer-Encoding: chunked for every body sent to an HTTP/1.1 client",
        Close = "close": "no length: every reply ends its connection, and a body ends with it",
    }
}

/// What the proxy is for. The Collector (SPE, docs/proxy.md) stores every
/// reply, serves each stored copy as it is, replays the miss's timing on
/// its hits, opens an origin connection per request and names itself in
/// what it says of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Proxy,
    Collector,
}

impl Role {
    /// Its name in `Cache-Status`: the Collector's is its own, so a proxy
    /// under test passing it on is not taken to claim it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Proxy => "cacheoff",
            Role::Collector => cacheoff_http::claim::COLLECTOR,
        }
    }

    /// What follows `X-Cache`'s verdict: the Collector's, passed on by a
    /// proxy under test that fetched through it, is not taken for that
    /// proxy's own (the Multiplier reads claims).
    pub(crate) fn x_cache_suffix(self) -> &'static str {
        match self {
            Role::Proxy => "",
            Role::Collector => " from cacheoff-collector",
        }
    }

    /// Whether origin connections carry more than one request: the
    /// Collector's each carry one, so every miss pays for its connection
    /// as the SPE paper asks.
    pub(crate) fn reuses_origin_connections(self) -> bool {
        self == Role::Proxy
    }

    /// Whether stored copies are judged by their freshness: the Collector
    /// serves each as it is (its proxies under test judge).
    pub(crate) fn judges_freshness(self) -> bool {
        self == Role::Proxy
    }
}

/// Where misses go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// Forward proxy: the origin named in each absolute request URI.
    Forward,
    /// Reverse proxy (accelerator): every request to this origin
    /// (`host:port`), whatever the request names.
    Reverse(String),
    /// Surrogate for several origins: the request's `Host` name (lower
    /// case, no port) picks the origin's `host:port`; other names get 421.
    ByHost(std::sync::Arc<std::collections::HashMap<String, String>>),
}

/// The memory store's size unless told (also the cache size a run of
/// the embedded reference proxy assumes).
pub const DEFAULT_MEMORY: u64 = 256 << 20;

#[derive(Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    pub upstream: Upstream,
    /// A parent proxy (`host:port`) for a forward proxy: every miss and
    /// revalidation goes to it, in absolute form, never to the origin
    /// (SPE's proxies under test fetch through the Collector).
    pub parent: Option<String>,
    /// Memory store size in bytes. With 0 and no disk nothing is stored:
    /// a plain forwarding proxy.
    pub memory: u64,
    /// Disk store directory and size in bytes.
    pub disk: Option<(PathBuf, u64)>,
    pub policy: Policy,
    /// What the proxy is for: a caching proxy, or the SPE Collector
    /// (stores every reply, never reuses origin connections, replays each
    /// miss's timing on its hits).
    pub role: Role,
    /// Clients allowed in addition to loopback (which always is).
    pub allow: Vec<IpNet>,
    /// Where a forward proxy may connect. `None`: anywhere while only
    /// loopback clients are allowed, [`DestRule::defaults`] (ports 80 and
    /// 443) once `allow` admits others.
    pub allow_dest: Option<Vec<DestRule>>,
    /// Largest stored object.
    pub max_object: u64,
    /// Largest request or reply header block.
    pub max_header: usize,
    /// Largest request body (uploads are buffered).
    pub max_request_body: u64,
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes from the origin.
    pub read_timeout: Duration,
    /// How long an idle client connection stays open (waiting for the
    /// first byte of its next request).
    pub client_idle_timeout: Duration,
    /// How long a client may take no bytes of a reply before it is closed.
    pub client_write_timeout: Duration,
    /// Longest time from a request's first byte to the end of its head;
    /// also the grace a request body gets before `client_body_min_rate`.
    pub client_header_timeout: Duration,
    /// Bytes per second a request body must keep up (after the grace);
    /// 0 turns the rule off.
    pub client_body_min_rate: u64,
    /// Client connections open at once across the proxy; more are
    /// refused (503 and closed).
    pub max_client_connections: usize,
    /// Request body bytes buffered at once across all connections; a body
    /// that does not fit gets 503.
    pub max_buffered_uploads: u64,
    /// Collapsed forwarding's bound: a request waiting for another's
    /// fetch of the same URL fetches it itself (or waits for the one of
    /// its fellow waiters that does) once that fetch has received nothing
    /// for this long, from its start or its last byte (`--collapse-wait`).
    /// Above the think time of every built-in workload (DataComm-1's
    /// norm(3 s, 1.5 s) passes 8 s about once in 2 300 fetches).
    pub collapse_wait: Duration,
    /// ... or once it has received less than this many bytes a second
    /// beyond its first `collapse_wait` (`--collapse-min-rate`); 0 turns
    /// the rate rule off.
    pub collapse_min_rate: u64,
    /// How long an idle origin connection stays pooled.
    pub pool_idle_timeout: Duration,
    /// Idle origin connections kept per origin.
    pub pool_per_origin: usize,
    /// Worker threads, each with its own listener and runtime.
    pub workers: usize,
    /// Squid-format access log.
    pub access_log: Option<PathBuf>,
    /// Judges freshness (tests pass a manual clock).
    pub clock: Arc<dyn Clock>,
    /// How reply bodies are delimited to clients.
    pub reply_framing: ReplyFraming,
    /// Deliberate misbehaviour (none by default).
    pub faults: Faults,
    /// Targeted cache-control fields obeyed over `Cache-Control` and
    /// removed downstream (RFC 9213): `CDN-Cache-Control` for a surrogate.
    pub targeted: Targeted,
    /// Serve requests no faster than this many a second, from one queue
    /// (`--capacity`): a proxy of known capacity for the peak finder.
    pub capacity: Option<f64>,
}

impl ProxyConfig {
    /// A forward proxy on `listen` with defaults for everything else.
    pub fn new(listen: SocketAddr) -> ProxyConfig {
        ProxyConfig {
            listen,
            upstream: Upstream::Forward,
            parent: None,
            memory: DEFAULT_MEMORY,
            disk: None,
            policy: Policy::default(),
            role: Role::Proxy,
            allow: Vec::new(),
            allow_dest: None,
            max_object: 64 << 20,
            max_header: 64 * 1024,
            max_request_body: 16 << 20,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            client_idle_timeout: Duration::from_secs(120),
            client_write_timeout: Duration::from_secs(60),
            client_header_timeout: Duration::from_secs(10),
            client_body_min_rate: 1024,
            max_client_connections: 10_000,
            max_buffered_uploads: 64 << 20,
            collapse_wait: Duration::from_secs(8),
            collapse_min_rate: 1024,
            pool_idle_timeout: Duration::from_secs(15),
            pool_per_origin: 64,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            access_log: None,
            clock: Arc::new(SystemClock),
            reply_framing: ReplyFraming::Length,
            faults: Faults::default(),
            targeted: Targeted::none(),
            capacity: None,
        }
    }

    /// Whether anything can be stored at all.
    pub fn stores(&self) -> bool {
        self.memory > 0 || self.disk.is_some()
    }

    /// Whether a client at `ip` may use the proxy.
    pub fn allows(&self, ip: IpAddr) -> bool {
        cacheoff_access::client_allowed(&self.allow, ip)
    }

    /// The destination rules in force, if destinations are checked.
    pub fn dest_rules(&self) -> Option<Vec<DestRule>> {
        match &self.allow_dest {
            Some(rules) => Some(rules.clone()),
            None if self.allow.is_empty() => None,
            None => Some(DestRule::defaults()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_unless_allowed() {
        let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        assert!(c.allows("127.9.9.9".parse().unwrap()));
        assert!(c.allows("::1".parse().unwrap()));
        assert!(c.allows("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!c.allows("10.1.2.3".parse().unwrap()));
        c.allow.push("10.0.0.0/8".parse().unwrap());
        assert!(c.allows("10.1.2.3".parse().unwrap()));
        assert!(!c.allows("192.168.1.1".parse().unwrap()));
    }

    #[test]
    fn destinations_are_checked_once_other_clients_are_allowed() {
        let mut c = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        assert_eq!(c.dest_rules(), None);
        c.allow.push("10.0.0.0/8".parse().unwrap());
        assert_eq!(c.dest_rules(), Some(DestRule::defaults()));
        c.allow_dest = Some(vec!["*:8080".parse().unwrap()]);
        assert_eq!(c.dest_rules().unwrap().len(), 1);
    }
}
