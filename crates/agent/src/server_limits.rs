//! What bounds a client's hold on an origin server (the proxy under test,
//! or robots without one), derived from the workload so that no deadline
//! cuts a transaction its robot still waits for:
//!
//! - `idle`: the wait for a request's first byte, on a new connection or
//!   between requests (`servers.idle_timeout`). Not counted: proxies keep
//!   idle connections, and closing them is the server's right.
//! - `request`: the rest of the request, head and body, counted from its
//!   first byte (`timeouts.xact`); a TLS or HTTP/2 handshake, counted
//!   from the connection's first bytes, and an HTTP/2 stream's body,
//!   counted from its headers, have the same.
//! - `response`: writing one whole response (`timeouts.xact`), plus the
//!   waits the server's own link emulation puts between its rounds.
//!
//! Why `timeouts.xact`: a robot's transaction clock starts at its send,
//! before any byte of the request can reach the server, and the robot
//! gives the transaction up `timeouts.xact` later. Everything both links
//! emulate happens inside that clock (the robot holds its request after
//! its send time, the server holds it after reading it, and a response's
//! slow-start rounds are paced while the robot waits), so a request or a
//! response still under way `timeouts.xact` after it started belongs to
//! a transaction its robot has already counted as failed. Cuts at these
//! deadlines count as `origin_timeout`.

use cacheoff_workload::Workload;
use std::time::Duration;

/// Most HTTP/2 streams a client may have open at once on one connection
/// (more wait their turn, as RFC 9113 has clients do), unless robots may
/// have more requests in flight on one (`robots.max_conns`).
const H2_STREAMS: u32 = 256;

/// One server's deadlines, the same for every connection of the run.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    pub idle: Duration,
    pub request: Duration,
    pub response: Duration,
}

impl Deadlines {
    pub fn of(w: &Workload) -> Deadlines {
        Deadlines {
            idle: w.servers.idle_timeout.0,
            request: w.timeouts.xact.0,
            response: w.timeouts.xact.0,
        }
    }
}

/// The `SETTINGS_MAX_CONCURRENT_STREAMS` origin servers announce.
pub fn h2_streams(w: &Workload) -> u32 {
    H2_STREAMS.max(w.robots.max_conns)
}
