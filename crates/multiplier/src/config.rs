//! The Multiplier's settings: every limit and timeout with its default,
//! in one place, and the `NAME=HOST:PORT` form proxies are named in.

use cacheoff_access::{DestRule, IpNet};
use cacheoff_rundir::spe::{Interval, Settings};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A proxy under test: a name for reports and where it listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyUnderTest {
    pub name: String,
    pub addr: SocketAddr,
}

/// Called with every interval record as it is written (a live console).
pub type IntervalHook = Arc<dyn Fn(&Interval) + Send + Sync>;

/// See [`Config::sample`].
pub type SampleHook = Arc<
    dyn Fn() -> std::collections::BTreeMap<String, cacheoff_resources::IntervalUsage> + Send + Sync,
>;

#[derive(Clone)]
pub struct Config {
    /// Where clients connect (port 0: any).
    pub listen: SocketAddr,
    /// The Collector, whose replies clients get.
    pub collector: SocketAddr,
    pub proxies: Vec<ProxyUnderTest>,
    /// The run directory to create.
    pub out: PathBuf,
    /// Pending copies per proxy; more are dropped.
    pub queue: usize,
    /// Bytes all queued copies may hold at once, split equally between
    /// the proxies (so a stalled one only ever loses its own copies); a
    /// copy that does not fit its proxy's share is dropped.
    pub max_queued_bytes: u64,
    /// From a copy's start (leaving the queue; connecting included) to its reply's last byte: an endless body, an
    /// endless run of `100 Continue` or a proxy that never answers ends
    /// here (a `timeout` mismatch).
    pub copy_timeout: Duration,
    /// Connections open at once to each proxy under test.
    pub conns_per_proxy: usize,
    /// Copy non-idempotent requests (POST, PUT, ...) too.
    pub copy_unsafe: bool,
    /// Interval between `intervals.jsonl` records.
    pub interval: Duration,
    /// Client-side worker threads, each with its own listener and runtime.
    pub workers: usize,
    /// Connecting to the Collector or a proxy.
    pub connect_timeout: Duration,
    /// From a request's send to its reply's first byte.
    pub first_byte_timeout: Duration,
    /// Longest wait for the next bytes of a reply (or for a client to
    /// take the next bytes of one).
    pub idle_timeout: Duration,
    /// How long a copy waits for the Collector's reply to the same request
    /// to end, before it is left uncompared.
    pub facts_wait: Duration,
    /// How long an idle keep-alive client connection waits for the first
    /// byte of its next request.
    pub client_idle_timeout: Duration,
    /// From a new connection's start, or from the first byte of a later
    /// request, to the end of the request's head: a whole-head deadline,
    /// not one per read.
    pub client_header_timeout: Duration,
    /// Bytes a second a request body must keep up: it may take
    /// `client_header_timeout` plus a second per this many bytes received
    /// (0 turns the pace off; `idle_timeout` still bounds each wait).
    pub client_body_min_rate: u64,
    /// Client connections open at once; at the cap a new one closes the
    /// accepting worker's connection that has waited longest for a
    /// request, or gets 503 if none is waiting.
    pub max_client_connections: usize,
    /// Request body bytes buffered at once across client connections; a
    /// body that does not fit gets 503 before it is read.
    pub max_buffered_uploads: u64,
    /// Clients allowed besides loopback (which always is).
    pub allow: Vec<IpNet>,
    /// Where requests may ask for. `None`: anywhere while only loopback
    /// clients are allowed, [`DestRule::defaults`] (ports 80 and 443)
    /// once `allow` admits others, as the reference proxy.
    pub allow_dest: Option<Vec<DestRule>>,
    /// Largest request or reply header block.
    pub max_header: usize,
    /// Largest request body (bodies are buffered to be copied).
    pub max_request_body: u64,
    /// At stop: how long copies in flight and in queue may take to finish.
    pub stop_grace: Duration,
    /// The command line, for the manifest.
    pub argv: Vec<String>,
    /// Which build runs, for the manifest.
    pub build: cacheoff_rundir::Build,
    pub on_interval: Option<IntervalHook>,
    /// What each watched proxy spent since the last call, by name; called
    /// once per interval.
    pub sample: Option<SampleHook>,
    /// What is watched for each name `sample` gives (the summary's
    /// `source`).
    pub watched: std::collections::BTreeMap<String, String>,
}

impl Config {
    /// A Multiplier on `listen` copying to `proxies`, defaults for the rest.
    pub fn new(
        listen: SocketAddr,
        collector: SocketAddr,
        proxies: Vec<ProxyUnderTest>,
        out: PathBuf,
    ) -> Config {
        Config {
            listen,
            collector,
            proxies,
            out,
            queue: 8192,
            max_queued_bytes: 64 << 20,
            copy_timeout: Duration::from_secs(120),
            conns_per_proxy: 1024,
            copy_unsafe: false,
            interval: Duration::from_secs(5),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            facts_wait: Duration::from_secs(60),
            client_idle_timeout: Duration::from_secs(120),
            client_header_timeout: Duration::from_secs(10),
            client_body_min_rate: 1024,
            max_client_connections: 10_000,
            max_buffered_uploads: 64 << 20,
            allow: Vec::new(),
            allow_dest: None,
            max_header: 64 * 1024,
            max_request_body: 16 << 20,
            stop_grace: Duration::from_secs(10),
            argv: Vec::new(),
            build: cacheoff_rundir::Build {
                version: env!("CARGO_PKG_VERSION").into(),
                git_revision: "unknown".into(),
            },
            on_interval: None,
            sample: None,
            watched: Default::default(),
        }
    }

    /// The destination rules in force, if destinations are checked.
    pub fn dest_rules(&self) -> Option<Vec<DestRule>> {
        match &self.allow_dest {
            Some(rules) => Some(rules.clone()),
            None if self.allow.is_empty() => None,
            None => Some(DestRule::defaults()),
        }
    }

    /// The settings as the manifest records them.
    pub fn settings(&self) -> Settings {
        let ms = |d: Duration| d.as_millis() as u64;
        Settings {
            queue: self.queue,
            conns_per_proxy: self.conns_per_proxy,
            copy_unsafe: self.copy_unsafe,
            interval_s: self.interval.as_secs_f64(),
            workers: self.workers,
            connect_timeout_ms: ms(self.connect_timeout),
            first_byte_timeout_ms: ms(self.first_byte_timeout),
            idle_timeout_ms: ms(self.idle_timeout),
            facts_wait_ms: ms(self.facts_wait),
            client_idle_timeout_ms: ms(self.client_idle_timeout),
            max_client_connections: self.max_client_connections,
            max_header: self.max_header,
            max_request_body: self.max_request_body,
            max_queued_bytes: self.max_queued_bytes,
            max_buffered_uploads: self.max_buffered_uploads,
            copy_timeout_ms: ms(self.copy_timeout),
            client_header_timeout_ms: ms(self.client_header_timeout),
            client_body_min_rate: self.client_body_min_rate,
            allow: self.allow.iter().map(ToString::to_string).collect(),
            allow_dest: self
                .dest_rules()
                .unwrap_or_default()
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("collector", &self.collector)
            .field("proxies", &self.proxies)
            .field("out", &self.out)
            .field("settings", &self.settings())
            .finish_non_exhaustive()
    }
}

/// Why a `NAME=HOST:PORT` argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyArgError {
    #[error("{0:?}: expected NAME=HOST:PORT")]
    Form(String),
    #[error("{0:?}: a proxy name is letters, digits, '_', '.' and '-'")]
    Name(String),
    #[error("{arg:?}: cannot resolve {addr:?} to one address")]
    Addr { arg: String, addr: String },
    #[error("proxy name {0:?} given twice")]
    Duplicate(String),
}

/// Parses `NAME=HOST:PORT` (a name of `[A-Za-z0-9_.-]`; the host a name
/// or an address, resolved now).
pub fn parse_proxy(arg: &str) -> Result<ProxyUnderTest, ProxyArgError> {
    let (name, addr) = arg
        .split_once('=')
        .ok_or_else(|| ProxyArgError::Form(arg.into()))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(ProxyArgError::Name(arg.into()));
    }
    let bad = || ProxyArgError::Addr {
        arg: arg.into(),
        addr: addr.into(),
    };
    if !addr.contains(':') {
        return Err(ProxyArgError::Form(arg.into()));
    }
    let addr = match addr.parse::<SocketAddr>() {
        Ok(a) => a,
        Err(_) => addr
            .to_socket_addrs()
            .map_err(|_| bad())?
            .next()
            .ok_or_else(bad)?,
    };
    Ok(ProxyUnderTest {
        name: name.into(),
        addr,
    })
}

/// Parses every argument, refusing a name given twice.
pub fn parse_proxies<S: AsRef<str>>(args: &[S]) -> Result<Vec<ProxyUnderTest>, ProxyArgError> {
    let mut out: Vec<ProxyUnderTest> = Vec::new();
    for a in args {
        let p = parse_proxy(a.as_ref())?;
        if out.iter().any(|q| q.name == p.name) {
            return Err(ProxyArgError::Duplicate(p.name));
        }
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        let p = parse_proxy("squid-6.1=127.0.0.1:3128").unwrap();
        assert_eq!(p.name, "squid-6.1");
        assert_eq!(p.addr, "127.0.0.1:3128".parse().unwrap());
        assert_eq!(
            parse_proxy("localhost:3128"),
            Err(ProxyArgError::Form("localhost:3128".into()))
        );
        assert!(matches!(
            parse_proxy("a b=127.0.0.1:1"),
            Err(ProxyArgError::Name(_))
        ));
        assert!(matches!(
            parse_proxy("=127.0.0.1:1"),
            Err(ProxyArgError::Name(_))
        ));
        assert!(matches!(
            parse_proxy("a=127.0.0.1"),
            Err(ProxyArgError::Form(_))
        ));
        assert!(matches!(
            parse_proxy("a=127.0.0.1:x"),
            Err(ProxyArgError::Addr { .. })
        ));
        assert_eq!(
            parse_proxy("v=[::1]:80").unwrap().addr,
            "[::1]:80".parse().unwrap()
        );
        let e = parse_proxies(&["a=127.0.0.1:1", "a=127.0.0.1:2"]).unwrap_err();
        assert_eq!(e.to_string(), "proxy name \"a\" given twice");
        assert_eq!(
            parse_proxies(&["a=127.0.0.1:1", "b=127.0.0.1:2"])
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn destinations_are_checked_once_other_clients_are_allowed() {
        let mut c = Config::new(
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.1:1".parse().unwrap(),
            Vec::new(),
            PathBuf::new(),
        );
        assert_eq!(c.dest_rules(), None);
        assert!(c.settings().allow_dest.is_empty());
        c.allow.push("10.0.0.0/8".parse().unwrap());
        assert_eq!(c.dest_rules(), Some(DestRule::defaults()));
        assert_eq!(c.settings().allow_dest, ["*:80", "*:443"]);
        c.allow_dest = Some(vec!["*:8080".parse().unwrap()]);
        assert_eq!(c.settings().allow_dest, ["*:8080"]);
    }
}
