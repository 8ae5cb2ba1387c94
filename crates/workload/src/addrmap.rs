//! Origin servers known by name, as Polygraph's `AddrMap`: in reverse
//! (surrogate) mode robots send `Host: <name>` and the surrogate routes
//! each name to its server's address.
//!
//! Server `i` (from 0) is `s<i+1>.bench.tst`, Polygraph's zone. The text
//! form, one `name address` pair per line (`#` comments), is what the
//! reference proxy reads with `--origin-map` and what product configs
//! are rendered from.

use std::fmt::Write as _;
use std::net::SocketAddr;

/// The zone every origin server name ends with.
pub const ZONE: &str = "bench.tst";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddrMap {
    entries: Vec<(String, SocketAddr)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AddrMapError {
    #[error("line {line}: expected `NAME HOST:PORT`, found {text:?}")]
    Syntax { line: usize, text: String },
    #[error("line {line}: name {name:?} appears twice")]
    Duplicate { line: usize, name: String },
    #[error("the address map is empty")]
    Empty,
}

impl AddrMap {
    /// Names the servers in order: `addrs[i]` becomes `s<i+1>.bench.tst`.
    pub fn for_servers(addrs: &[SocketAddr]) -> AddrMap {
        AddrMap {
            entries: addrs
                .iter()
                .enumerate()
                .map(|(i, a)| (server_name(i), *a))
                .collect(),
        }
    }

    pub fn entries(&self) -> &[(String, SocketAddr)] {
        &self.entries
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The address of `host` (a `Host:` value; a port in it is ignored,
    /// case does not matter).
    pub fn lookup(&self, host: &str) -> Option<SocketAddr> {
        let name = strip_port(host);
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, a)| *a)
    }

    pub fn to_text(&self) -> String {
        let mut o = String::from("# cacheoff address map: origin server name, address\n");
        for (n, a) in &self.entries {
            let _ = writeln!(o, "{n} {a}");
        }
        o
    }

    pub fn parse(text: &str) -> Result<AddrMap, AddrMapError> {
        let mut entries: Vec<(String, SocketAddr)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let syntax = || AddrMapError::Syntax {
                line: i + 1,
                text: raw.to_string(),
            };
            let mut words = line.split_whitespace();
            let (Some(name), Some(addr), None) = (words.next(), words.next(), words.next()) else {
                return Err(syntax());
            };
            let addr: SocketAddr = addr.parse().map_err(|_| syntax())?;
            if entries.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                return Err(AddrMapError::Duplicate {
                    line: i + 1,
                    name: name.to_string(),
                });
            }
            entries.push((name.to_ascii_lowercase(), addr));
        }
        if entries.is_empty() {
            return Err(AddrMapError::Empty);
        }
        Ok(AddrMap { entries })
    }
}

/// The name of server `index` (from 0).
pub fn server_name(index: usize) -> String {
    format!("s{}.{ZONE}", index + 1)
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split(']').next().map_or(host, |h| &h[1..]);
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn names_follow_server_order_and_round_trip_through_text() {
        let m = AddrMap::for_servers(&[addr("127.2.0.1:8080"), addr("127.2.0.2:8080")]);
        assert_eq!(
            m.names().collect::<Vec<_>>(),
            ["s1.bench.tst", "s2.bench.tst"]
        );
        assert_eq!(AddrMap::parse(&m.to_text()).unwrap(), m);
    }

    #[test]
    fn lookup_ignores_port_and_case() {
        let m = AddrMap::for_servers(&[addr("127.2.0.1:8080"), addr("127.2.0.2:8081")]);
        assert_eq!(m.lookup("S2.Bench.TST:80"), Some(addr("127.2.0.2:8081")));
        assert_eq!(m.lookup("s1.bench.tst"), Some(addr("127.2.0.1:8080")));
        assert_eq!(m.lookup("s3.bench.tst"), None);
        assert_eq!(m.lookup("127.2.0.1:8080"), None);
    }

    #[test]
    fn bad_lines_are_named() {
        assert_eq!(
            AddrMap::parse("a 127.0.0.1:1\nb nowhere\n"),
            Err(AddrMapError::Syntax {
                line: 2,
                text: "b nowhere".into()
            })
        );
        assert!(matches!(
            AddrMap::parse("a 127.0.0.1:1\nA 127.0.0.1:2"),
            Err(AddrMapError::Duplicate { line: 2, .. })
        ));
        assert_eq!(AddrMap::parse("# nothing\n"), Err(AddrMapError::Empty));
    }
}
