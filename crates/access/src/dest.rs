//! Where a connection made for a peer may go (`--allow-dest`,
//! `--allow-target`): the request's
//! `host[:port]` normalised once ([`Dest::parse`]) and matched against
//! [`DestRule`]s before any connection is tried, so a refused destination
//! looks the same (403) whether its port is open or closed.
//!
//! Numeric hosts follow std's `IpAddr` rules only: the other IPv4 spellings
//! that resolvers accept (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`)
//! are refused as malformed rather than guessed at, so a rule for
//! `127.0.0.0/8` cannot be dodged by spelling the address differently.

use crate::unmap;
use ipnet::IpNet;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

/// A destination host, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Ip(IpAddr),
    /// Lower case, without a trailing dot.
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    pub host: Host,
    pub port: u16,
}

impl Dest {
    /// Parses the authority of an `http://` URI (already lower case);
    /// `Err(400)` for anything but a name, a dotted-quad IPv4 address or a
    /// bracketed IPv6 one, with an optional port (80 if absent).
    pub fn parse(authority: &str) -> Result<Dest, u16> {
        let (host, port) = match authority.strip_prefix('[') {
            Some(rest) => {
                let (v6, after) = rest.split_once(']').ok_or(400u16)?;
                let ip = v6.parse::<Ipv6Addr>().map_err(|_| 400u16)?;
                let port = match after {
                    "" => None,
                    p => Some(p.strip_prefix(':').ok_or(400u16)?),
                };
                (Host::Ip(unmap(IpAddr::V6(ip))), port)
            }
            None => {
                let (h, port) = match authority.split_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (authority, None),
                };
                (parse_host(h)?, port)
            }
        };
        let port = match port {
            None => 80,
            Some(p) => parse_port(p).filter(|&p| p != 0).ok_or(400u16)?,
        };
        Ok(Dest { host, port })
    }

    /// The proxy's own machine: what `*` never admits.
    fn is_local(&self) -> bool {
        match &self.host {
            Host::Ip(ip) => ip.is_loopback() || ip.is_unspecified(),
            Host::Name(n) => n == "localhost" || n.ends_with(".localhost"),
        }
    }
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

/// A host name or a dotted-quad address; other numeric forms are refused.
fn parse_host(h: &str) -> Result<Host, u16> {
    if let Ok(ip) = h.parse::<std::net::Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    let name = h.strip_suffix('.').unwrap_or(h);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(400);
    }
    // As URL parsers do: a name whose last label is a number is an IPv4
    // address, and std rejected it above.
    let last = name.rsplit('.').next().unwrap_or(name);
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(400);
    }
    Ok(Host::Name(name.to_ascii_lowercase()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// `*`: any host but the proxy's own machine.
    Any,
    Name(String),
    /// `*.example.com`: names under it.
    Under(String),
    Net(IpNet),
}

/// One `--allow-dest` pattern: `HOST[:PORTS]`, HOST being `*`, a name,
/// `*.domain`, an address or a CIDR (IPv6 in brackets when a port
/// follows), PORTS a port, `LOW-HIGH` or `*` (the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestRule {
    host: HostPattern,
    ports: (u16, u16),
}

impl DestRule {
    /// What a proxy open to other clients allows unless told otherwise.
    pub fn defaults() -> Vec<DestRule> {
        vec![
            DestRule {
                host: HostPattern::Any,
                ports: (80, 80),
            },
            DestRule {
                host: HostPattern::Any,
                ports: (443, 443),
            },
        ]
    }

    pub fn admits(&self, d: &Dest) -> bool {
        if d.port < self.ports.0 || d.port > self.ports.1 {
            return false;
        }
        match (&self.host, &d.host) {
            (HostPattern::Any, _) => !d.is_local(),
            (HostPattern::Name(p), Host::Name(n)) => p == n,
            (HostPattern::Under(p), Host::Name(n)) => {
                n.len() > p.len() + 1
                    && n.ends_with(p.as_str())
                    && n[..n.len() - p.len()].ends_with('.')
            }
            (HostPattern::Net(net), Host::Ip(ip)) => net.contains(ip),
            _ => false,
        }
    }
}

/// Whether a name admitted as `asked` may be connected to at `ip`, where
/// it resolved: a rule by address (`*` included) must admit the address
/// too, so a name pointing at this machine does not get through `*`;
/// a rule naming the host is trusted with whatever it resolves to.
pub fn admitted_resolved(rules: &[DestRule], asked: &Dest, ip: IpAddr) -> bool {
    let resolved = Dest {
        host: Host::Ip(unmap(ip)),
        port: asked.port,
    };
    rules.iter().any(|r| match r.host {
        HostPattern::Any | HostPattern::Net(_) => r.admits(&resolved),
        HostPattern::Name(_) | HostPattern::Under(_) => r.admits(asked),
    })
}

/// Whether any of `rules` admits `d`.
pub fn admitted(rules: &[DestRule], d: &Dest) -> bool {
    rules.iter().any(|r| r.admits(d))
}

impl FromStr for DestRule {
    type Err = String;

    fn from_str(s: &str) -> Result<DestRule, String> {
        let bad = |why: &str| format!("{s:?}: {why} (expected HOST[:PORTS])");
        let net_or_ip = |h: &str| {
            h.parse::<IpNet>()
                .ok()
                .or_else(|| h.parse::<IpAddr>().ok().map(IpNet::from))
        };
        let (host, ports) = if let Some(rest) = s.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            let net = net_or_ip(h).ok_or_else(|| bad("not an IPv6 address or CIDR"))?;
            let ports = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| bad("junk after ]"))?),
            };
            (HostPattern::Net(net), ports)
        } else if let Some(net) = net_or_ip(s) {
            (HostPattern::Net(net), None)
        } else {
            let (h, ports) = match s.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            };
            let host = if h == "*" {
                HostPattern::Any
            } else if let Some(net) = net_or_ip(h) {
                HostPattern::Net(net)
            } else if let Some(d) = h.strip_prefix("*.") {
                match parse_host(d) {
                    Ok(Host::Name(n)) => HostPattern::Under(n),
                    _ => return Err(bad("not a domain after *.")),
                }
            } else {
                match parse_host(h) {
                    Ok(Host::Name(n)) => HostPattern::Name(n),
                    _ => return Err(bad("not a host name, address or CIDR")),
                }
            };
            (host, ports)
        };
        let ports = match ports {
            None | Some("*") => (1, u16::MAX),
            Some(p) => {
                let (lo, hi) = p.split_once('-').unwrap_or((p, p));
                match (parse_port(lo), parse_port(hi)) {
                    (Some(lo), Some(hi)) if lo >= 1 && lo <= hi => (lo, hi),
                    _ => return Err(bad("bad port or port range")),
                }
            }
        };
        let host = match host {
            HostPattern::Net(n) => HostPattern::Net(match n {
                IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
                    Some(v4) => IpNet::new(IpAddr::V4(v4), v6.prefix_len() - 96)
                        .map_err(|_| bad("bad prefix"))?,
                    None => n,
                },
                n => n,
            }),
            h => h,
        };
        Ok(DestRule { host, ports })
    }
}

impl fmt::Display for DestRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Any => f.write_str("*")?,
            HostPattern::Name(n) => f.write_str(n)?,
            HostPattern::Under(n) => write!(f, "*.{n}")?,
            HostPattern::Net(IpNet::V6(n)) => write!(f, "[{n}]")?,
            HostPattern::Net(n) => write!(f, "{n}")?,
        }
        match self.ports {
            (1, u16::MAX) => Ok(()),
            (lo, hi) if lo == hi => write!(f, ":{lo}"),
            (lo, hi) => write!(f, ":{lo}-{hi}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str) -> Result<Dest, u16> {
        Dest::parse(a)
    }

    #[test]
    fn only_std_address_forms_and_names_are_destinations() {
        assert_eq!(
            d("example.com"),
            Ok(Dest {
                host: Host::Name("example.com".into()),
                port: 80
            })
        );
        assert_eq!(
            d("localhost.:8080").unwrap().host,
            Host::Name("localhost".into())
        );
        assert_eq!(
            d("10.1.2.3:81").unwrap().host,
            Host::Ip("10.1.2.3".parse().unwrap())
        );
        assert_eq!(
            d("[::ffff:127.0.0.1]:80").unwrap().host,
            Host::Ip("127.0.0.1".parse().unwrap())
        );
        for bad in [
            "2130706433",
            "0x7f.1",
            "0x7f000001",
            "127.1",
            "0177.0.0.1",
            "127.0.0.01",
            "h:0",
            "h:65536",
            "h:",
            "h:8o",
            "[::1",
            "[::1]x",
            "a b",
            "a..b",
            "",
        ] {
            assert_eq!(d(bad), Err(400), "{bad}");
        }
    }

    #[test]
    fn rules_match_hosts_nets_and_ports() {
        let r = |s: &str| s.parse::<DestRule>().unwrap();
        let yes = |rule: &str, a: &str| r(rule).admits(&d(a).unwrap());
        assert!(yes("*:80", "example.com"));
        assert!(!yes("*:80", "example.com:8080"));
        assert!(!yes("*:80", "localhost"));
        assert!(!yes("*:80", "127.0.0.1"));
        assert!(!yes("*:80", "0.0.0.0"));
        assert!(!yes("*", "[::1]:22"));
        assert!(yes("localhost:8000-9000", "localhost:8080"));
        assert!(yes("127.0.0.0/8", "127.0.0.1:22"));
        assert!(yes("[::ffff:127.0.0.0/104]:22", "127.0.0.1:22"));
        assert!(yes("*.example.com:443", "a.b.example.com:443"));
        assert!(!yes("*.example.com", "example.com"));
        assert!(!yes("*.example.com", "badexample.com"));
        assert!(yes("2001:db8::/32", "[2001:db8::1]:80"));
        assert!(!yes("10.0.0.0/8", "ten.example"));
        for bad in ["*:0", "*:9-8", "[::1", "*.1.2", "a b:80", "h:x"] {
            assert!(bad.parse::<DestRule>().is_err(), "{bad}");
        }
        for s in [
            "*:80",
            "*.example.com:1-1024",
            "10.0.0.0/8",
            "[2001:db8::/32]:443",
            "h",
        ] {
            assert_eq!(r(s).to_string(), s);
        }
    }
}
