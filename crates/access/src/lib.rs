//! Access rules shared by every listener that acts for others (the
//! reference proxy, the Multiplier, a fleet agent): which clients may
//! connect ([`client_allowed`]: loopback always, others only by CIDR), and
//! where a connection made on a peer's behalf may go ([`DestRule`]s
//! matched against a normalised [`Dest`]), and what a listener holds at
//! most for its clients (`hold`: byte [`Budget`]s, connection [`Slots`],
//! a body's pace by [`BodyClock`]), and the door itself ([`listener`]:
//! one nonblocking socket per worker on a shared port). One spelling of
//! each rule, so `--allow` and `--allow-dest` mean the same on every
//! command, and the proxy and the Multiplier bound clients alike.

mod dest;
mod hold;
mod listen;

pub use dest::{admitted, admitted_resolved, Dest, DestRule, Host};
pub use hold::{BodyClock, Budget, Charge, Slot, Slots};
pub use ipnet::IpNet;
pub use listen::{listener, BACKLOG};

use std::net::IpAddr;

/// An IPv4-mapped IPv6 address as the IPv4 address it is, so a rule for
/// `127.0.0.0/8` sees `::ffff:127.0.0.1` too.
pub fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether a client at `ip` may connect: loopback always, others only
/// when one of `allow` contains them.
pub fn client_allowed(allow: &[IpNet], ip: IpAddr) -> bool {
    let ip = unmap(ip);
    ip.is_loopback() || allow.iter().any(|n| n.contains(&ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_unless_allowed() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let mut allow = Vec::new();
        assert!(client_allowed(&allow, ip("127.9.9.9")));
        assert!(client_allowed(&allow, ip("::1")));
        assert!(client_allowed(&allow, ip("::ffff:127.0.0.1")));
        assert!(!client_allowed(&allow, ip("10.1.2.3")));
        allow.push("10.0.0.0/8".parse().unwrap());
        assert!(client_allowed(&allow, ip("10.1.2.3")));
        assert!(client_allowed(&allow, ip("::ffff:10.1.2.3")));
        assert!(!client_allowed(&allow, ip("192.168.1.1")));
    }
}
