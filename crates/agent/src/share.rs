//! One host's part of a run that many hosts run together (`cacheoff
//! agent`): which of the run's workers it runs (their robots), which
//! origin servers, where every server is, and the common start.
//!
//! A run of `total_workers` workers plans each worker's robots the same
//! way wherever it runs, so hosts that run disjoint worker ranges
//! together issue exactly the plan one host would (same plan digest).

use crate::timeline::Jump;
use cacheoff_workload::Workload;
use socket2::{Domain, Socket, Type};
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone)]
pub struct Share {
    /// The run's workers this host runs (indices in the whole run).
    pub workers: Range<u32>,
    pub total_workers: u32,
    /// Every origin server's address, by index, as announced by the
    /// coordinator.
    pub servers: Vec<SocketAddr>,
    /// The index of each server this host runs, in the order of
    /// [`RunConfig::bound`](crate::RunConfig::bound)'s listeners.
    pub own_servers: Vec<u32>,
    /// One address for all of this host's robots instead of the
    /// workload's range.
    pub robot_ip: Option<Ipv4Addr>,
    /// The run's nonce: every host names objects alike.
    pub nonce: u32,
    /// The common start, in Unix seconds of the run's (the
    /// coordinator's) clock.
    pub start_unix: f64,
    /// This host's clock minus the run's.
    pub clock_offset_s: f64,
    /// How far hosts' clocks may still differ after the correction.
    pub clock_slack_s: f64,
    /// Goal phases as the coordinator decides them.
    pub jump: Arc<OnceLock<Jump>>,
}

/// Binds origin servers `indices` of `wl`: each at its own address of the
/// workload's range, or all on `ip` with a port each.
pub fn bind_servers_at(
    wl: &Workload,
    indices: Range<u32>,
    ip: Option<Ipv4Addr>,
) -> Result<Vec<std::net::TcpListener>, crate::AgentError> {
    let first = u32::from(wl.servers.first_ip);
    indices
        .map(|i| {
            let addr = match ip {
                Some(ip) => SocketAddr::new(ip.into(), 0),
                None => SocketAddr::new(Ipv4Addr::from(first + i).into(), wl.servers.port),
            };
            listen(addr).map_err(|source| crate::AgentError::Bind { addr, source })
        })
        .collect()
}

fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    Ok(s.into())
}
