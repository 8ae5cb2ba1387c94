//! Where a run's robots send: straight to the origin servers, a forward
//! proxy, a surrogate (over HTTP or HTTPS), or cacheoff's reference proxy
//! started here as either; on this host or from a fleet's agents. One
//! choice for every command that runs (`run`, `replay`, `peak`).

use crate::RunError;
use cacheoff_agent::{BoundServers, Via};
use cacheoff_workload::{AddrMap, Overrides, Workload};
use std::net::SocketAddr;
use std::sync::Arc;

/// A surrogate under test: `HOST:PORT`, or `https://HOST:PORT` to speak
/// TLS to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surrogate {
    pub addr: SocketAddr,
    pub tls: bool,
}

/// What the command line asked for (`--proxy`, `--reverse [ADDR]`,
/// `--direct`); with none of them, the reference proxy is tested.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetSpec {
    /// A forward proxy under test.
    pub proxy: Option<SocketAddr>,
    /// Reverse mode: `Some(None)` tests the reference proxy as the
    /// surrogate.
    pub reverse: Option<Option<Surrogate>>,
    /// No proxy.
    pub direct: bool,
}

impl TargetSpec {
    /// The surrogate's address, if `--reverse` named one.
    pub fn reverse_addr(&self) -> Option<Option<SocketAddr>> {
        self.reverse.map(|r| r.map(|s| s.addr))
    }

    /// The run tests cacheoff's own reference proxy, started here.
    pub fn embedded(&self) -> bool {
        self.proxy.is_none() && !self.direct && matches!(self.reverse, None | Some(None))
    }

    /// What the target implies for the workload: HTTPS to an `https://`
    /// surrogate, and the reference proxy's memory as the cache size
    /// when it is the cache under test and none was given.
    pub fn settle(&self, o: &mut Overrides) {
        if self.reverse.flatten().is_some_and(|r| r.tls) {
            o.tls = Some(true);
        }
        if o.cache_size.is_none() && self.embedded() {
            o.cache_size = Some(cacheoff_base::Bytes(cacheoff_proxy::DEFAULT_MEMORY));
        }
    }
}

/// The target chosen: how robots reach the servers, the origin servers
/// bound before the run (reverse mode), and the reference proxy when it
/// runs here.
pub struct Target {
    pub via: Via,
    /// Origin servers bound before the run (reverse mode).
    pub bound: Option<Arc<BoundServers>>,
    pub embedded: Option<cacheoff_proxy::Proxy>,
}

impl Target {
    /// The target of `spec` for `workload`: a surrogate workload (WebAxe)
    /// tests a surrogate unless told otherwise, and with no proxy named
    /// the reference proxy is started and tested. A proxy named must
    /// answer first ([`crate::preflight`]). Over a fleet (`fleet`) the
    /// agents' robots reach the proxy or surrogate named, or the
    /// reference proxy started here. `what` names the workload in
    /// messages.
    pub fn choose(
        workload: &Workload,
        spec: &TargetSpec,
        what: &str,
        fleet: bool,
    ) -> Result<Target, RunError> {
        if fleet {
            fleet_target(workload, spec)
        } else {
            here(workload, spec, what)
        }
    }

    /// What the proxy under test is, for reports: the reference proxy's
    /// own description when it is the one.
    pub fn label(&self, asked: Option<String>) -> Option<String> {
        asked.or_else(|| self.embedded.as_ref().map(reference_label))
    }
}

fn surrogate(workload: &Workload, t: &TargetSpec) -> bool {
    t.reverse.is_some() || (workload.surrogate && t.proxy.is_none() && !t.direct)
}

fn here(workload: &Workload, t: &TargetSpec, what: &str) -> Result<Target, RunError> {
    let (proxy, reverse, direct) = (t.proxy, t.reverse_addr(), t.direct);
    let surrogate = surrogate(workload, t);
    if let Some(p) = proxy.or(reverse.flatten()) {
        if surrogate && workload.servers.port == 0 {
            return Err(RunError::SurrogateNeedsPort {
                addr: p,
                what: what.to_string(),
            });
        }
        crate::preflight::check(p)?;
    }
    // Servers are bound first in reverse mode: the address map names them.
    let bound = if surrogate {
        Some(Arc::new(
            BoundServers::bind(workload).map_err(RunError::BindServers)?,
        ))
    } else {
        None
    };
    let embedded = match (proxy, reverse, direct) {
        (None, None, false) if !surrogate => Some(start_reference_proxy(workload, None)?),
        (None, None | Some(None), false) => Some(start_reference_proxy(
            workload,
            bound.as_ref().map(|b| b.addr_map()),
        )?),
        _ => None,
    };
    let target = proxy
        .or(reverse.flatten())
        .or(embedded.as_ref().map(|p| p.addr()));
    let via = match target {
        None => Via::Direct,
        Some(t) if surrogate => Via::Surrogate(t),
        Some(t) => Via::Proxy(t),
    };
    Ok(Target {
        via,
        bound,
        embedded,
    })
}

/// The target of a run over many hosts: the agents' robots reach the
/// proxy or surrogate named, or the reference proxy started here (on
/// loopback: for agents on this machine).
fn fleet_target(workload: &Workload, t: &TargetSpec) -> Result<Target, RunError> {
    let surrogate = surrogate(workload, t);
    let named = t.proxy.or(t.reverse_addr().flatten());
    if let Some(p) = named {
        crate::preflight::check(p)?;
    }
    let (via, embedded) = match named {
        Some(p) if surrogate => (Via::Surrogate(p), None),
        Some(p) => (Via::Proxy(p), None),
        None if t.direct => (Via::Direct, None),
        None if surrogate => return Err(RunError::FleetSurrogateUnnamed),
        None => {
            let p = start_reference_proxy(workload, None)?;
            (Via::Proxy(p.addr()), Some(p))
        }
    };
    Ok(Target {
        via,
        bound: None,
        embedded,
    })
}

/// The reference proxy, sized to the workload's cache size: a forward
/// proxy, or with an address map a surrogate for those servers.
fn start_reference_proxy(
    w: &Workload,
    origins: Option<AddrMap>,
) -> Result<cacheoff_proxy::Proxy, RunError> {
    let mut cfg = cacheoff_proxy::ProxyConfig::new((std::net::Ipv4Addr::LOCALHOST, 0).into());
    if let Some(size) = w.cache_size {
        cfg.memory = size.0;
    }
    if let Some(map) = origins {
        let by_name = map
            .entries()
            .iter()
            .map(|(n, a)| (n.clone(), a.to_string()))
            .collect();
        cfg.upstream = cacheoff_proxy::Upstream::ByHost(Arc::new(by_name));
        cfg.targeted = cacheoff_cache::Targeted::cdn();
    }
    cacheoff_proxy::Proxy::start(cfg).map_err(RunError::ReferenceProxy)
}

/// The reference proxy as reports name it.
pub fn reference_label(p: &cacheoff_proxy::Proxy) -> String {
    let c = p.config();
    format!(
        "cacheoff reference proxy {} ({}, {} memory)",
        env!("CARGO_PKG_VERSION"),
        c.policy.name(),
        cacheoff_base::Bytes(c.memory)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(name: &str) -> Workload {
        cacheoff_workload::load(name, &Overrides::default()).unwrap()
    }

    /// A port where nothing listens.
    fn closed() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn the_target_settles_https_and_the_reference_proxy_s_cache_size() {
        let mut o = Overrides::default();
        TargetSpec::default().settle(&mut o);
        assert_eq!(
            o.cache_size,
            Some(cacheoff_base::Bytes(cacheoff_proxy::DEFAULT_MEMORY))
        );
        assert_eq!(o.tls, None);
        let https = TargetSpec {
            reverse: Some(Some(Surrogate {
                addr: closed(),
                tls: true,
            })),
            ..TargetSpec::default()
        };
        let mut o = Overrides::default();
        https.settle(&mut o);
        assert_eq!((o.tls, o.cache_size), (Some(true), None));
        let direct = TargetSpec {
            direct: true,
            ..TargetSpec::default()
        };
        assert!(!direct.embedded());
        let mut o = Overrides::default();
        direct.settle(&mut o);
        assert_eq!(o.cache_size, None, "no cache under test");
    }

    #[test]
    fn a_surrogate_named_without_server_ports_is_refused_before_anything_starts() {
        let spec = TargetSpec {
            reverse: Some(Some(Surrogate {
                addr: closed(),
                tls: false,
            })),
            ..TargetSpec::default()
        };
        let Err(e) = Target::choose(&builtin("webaxe-4"), &spec, "webaxe-4", false) else {
            panic!("chosen")
        };
        assert!(matches!(e, RunError::SurrogateNeedsPort { .. }), "{e}");
        assert_eq!(e.code(), crate::EXIT_USAGE);
        assert!(e.to_string().contains("addrmap webaxe-4"), "{e}");
        // Over a fleet the surrogate must be named at all.
        let Err(e) = Target::choose(&builtin("webaxe-4"), &TargetSpec::default(), "w", true) else {
            panic!("chosen")
        };
        assert!(matches!(e, RunError::FleetSurrogateUnnamed), "{e}");
    }

    #[test]
    fn a_named_proxy_must_answer_and_none_named_starts_the_reference_proxy() {
        let spec = TargetSpec {
            proxy: Some(closed()),
            ..TargetSpec::default()
        };
        for fleet in [false, true] {
            let Err(e) = Target::choose(&builtin("simple"), &spec, "simple", fleet) else {
                panic!("chosen")
            };
            assert!(matches!(e, RunError::NoProxy { .. }), "{e}");
        }
        let direct = TargetSpec {
            direct: true,
            ..TargetSpec::default()
        };
        let t = Target::choose(&builtin("simple"), &direct, "simple", false).unwrap();
        assert!(matches!(t.via, Via::Direct) && t.embedded.is_none() && t.bound.is_none());
        assert_eq!(t.label(None), None);
        let t =
            Target::choose(&builtin("simple"), &TargetSpec::default(), "simple", false).unwrap();
        let p = t.embedded.as_ref().expect("the reference proxy");
        assert!(matches!(t.via, Via::Proxy(a) if a == p.addr()));
        assert!(t
            .label(None)
            .unwrap()
            .starts_with("cacheoff reference proxy"));
        assert_eq!(t.label(Some("mine".into())).as_deref(), Some("mine"));
        if let Some(p) = t.embedded {
            p.stop();
        }
    }
}
