//! Whether a request may be passed on, decided from its head before its
//! body is read or anything is relayed: a tunnel, a request without an
//! absolute target, a loop (this Multiplier's `Via` token already in the
//! request, or a target naming its own address) and a destination the
//! rules do not admit are refused here.

use crate::request::absolute_target;
use cacheoff_access::{admitted, admitted_resolved, Dest, DestRule, Host};
use cacheoff_http::RequestHead;
use cacheoff_rundir::spe::Refusal;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::time::Duration;

/// A request the Multiplier answers itself, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    pub status: u16,
    pub kind: Refusal,
    pub text: &'static str,
}

impl Refused {
    pub(crate) const fn new(status: u16, kind: Refusal, text: &'static str) -> Refused {
        Refused { status, kind, text }
    }
}

const TUNNEL: Refused = Refused::new(
    501,
    Refusal::Tunnel,
    "the Multiplier copies plain HTTP only: a CONNECT tunnel's bytes cannot be compared between proxies",
);
const NO_TARGET: Refused = Refused::new(
    400,
    Refusal::Malformed,
    "a request to a proxy names http://host/...",
);
const BAD_HOST: Refused = Refused::new(
    400,
    Refusal::Malformed,
    "the target's host is not a name, a dotted-quad IPv4 address or a bracketed IPv6 one",
);
const LOOP: Refused = Refused::new(
    508,
    Refusal::Loop,
    "loop detected: this request has been through this Multiplier already, or names it",
);
pub(crate) const DEST_DENIED: Refused = Refused::new(
    403,
    Refusal::DestDenied,
    "destination not allowed (--allow-dest)",
);

/// This Multiplier's `Via` pseudonym: unique per instance (64 random bits
/// from the standard library's per-process hash keys, the process id and
/// the time), so two Multipliers in a chain do not take each other's
/// requests for loops.
pub(crate) fn via_token() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("cacheoff-multiplier-{:016x}", h.finish())
}

/// A request that may go on: its absolute target and where it asks for.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub target: String,
    pub dest: Dest,
}

/// The checks that need only the head, in order: tunnel, target, loop,
/// destination rules.
pub(crate) fn admit(
    head: &RequestHead,
    own: SocketAddr,
    via: &str,
    rules: Option<&[DestRule]>,
) -> Result<Admitted, Refused> {
    if head.method.as_str().eq_ignore_ascii_case("CONNECT") {
        return Err(TUNNEL);
    }
    let target = absolute_target(head).ok_or(NO_TARGET)?;
    let authority = target[7..]
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let dest = Dest::parse(&authority).map_err(|_| BAD_HOST)?;
    if names_self(&dest, own) || carries(head, via) {
        return Err(LOOP);
    }
    if rules.is_some_and(|r| !admitted(r, &dest)) {
        return Err(DEST_DENIED);
    }
    Ok(Admitted { target, dest })
}

/// Whether a target names the Multiplier's own listening address (a
/// loopback or unspecified address, or `localhost`, when it listens on
/// an unspecified one). Other spellings of it are caught one hop later
/// by the `Via` token.
fn names_self(d: &Dest, own: SocketAddr) -> bool {
    if d.port != own.port() {
        return false;
    }
    let own_ip = cacheoff_access::unmap(own.ip());
    let everywhere = own_ip.is_unspecified();
    match &d.host {
        // 0.0.0.0 and :: reach this machine.
        Host::Ip(ip) => *ip == own_ip || ip.is_unspecified() || (everywhere && ip.is_loopback()),
        Host::Name(n) => {
            (n == "localhost" || n.ends_with(".localhost")) && (everywhere || own_ip.is_loopback())
        }
    }
}

/// Whether one of the request's `Via` lines holds this Multiplier's token.
fn carries(head: &RequestHead, via: &str) -> bool {
    head.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("via")
            && String::from_utf8_lossy(v)
                .split(',')
                .any(|hop| hop.split_whitespace().nth(1) == Some(via))
    })
}

/// A name a wildcard or address rule admitted must resolve only to
/// addresses the rules admit too (the Collector resolves it again, so
/// every address must pass). Unresolvable names are refused as well.
pub(crate) async fn admit_resolved(
    dest: &Dest,
    rules: &[DestRule],
    timeout: Duration,
) -> Result<(), Refused> {
    let Host::Name(name) = &dest.host else {
        return Ok(());
    };
    let lookup = tokio::net::lookup_host((name.as_str(), dest.port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(timeout, lookup).await {
        Ok(Ok(a)) => a.collect(),
        _ => Vec::new(),
    };
    let ok = !addrs.is_empty() && addrs.iter().all(|a| admitted_resolved(rules, dest, a.ip()));
    ok.then_some(()).ok_or(DEST_DENIED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_http::request::parse_request;

    fn head(raw: &str) -> RequestHead {
        parse_request(raw.as_bytes(), true).unwrap().unwrap()
    }

    const OWN: &str = "127.0.0.1:3128";

    fn check(raw: &str, rules: Option<&[DestRule]>) -> Result<Admitted, Refused> {
        admit(
            &head(raw),
            OWN.parse().unwrap(),
            "cacheoff-multiplier-ab",
            rules,
        )
    }

    #[test]
    fn loops_are_refused_by_token_and_by_address() {
        let ok = check("GET http://o:1/a HTTP/1.1\r\nHost: o:1\r\n\r\n", None).unwrap();
        assert_eq!(ok.target, "http://o:1/a");
        for raw in [
            "GET http://127.0.0.1:3128/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET http://0.0.0.0:3128/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n",
            "POST http://LocalHost:3128/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET http://o:1/ HTTP/1.1\r\nHost: o:1\r\nVia: 1.0 a, 1.1 cacheoff-multiplier-ab\r\n\r\n",
            "GET http://o:1/ HTTP/1.1\r\nHost: o:1\r\nVia: 1.1 x\r\nVia: HTTP/1.1 cacheoff-multiplier-ab (c)\r\n\r\n",
        ] {
            assert_eq!(check(raw, None).unwrap_err(), LOOP, "{raw}");
        }
        // Another Multiplier's token, another port, another address.
        for raw in [
            "GET http://o:1/ HTTP/1.1\r\nHost: o:1\r\nVia: 1.1 cacheoff-multiplier-abc\r\n\r\n",
            "GET http://127.0.0.1:3129/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET http://127.0.0.2:3128/ HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            assert!(check(raw, None).is_ok(), "{raw}");
        }
        let any: SocketAddr = "0.0.0.0:3128".parse().unwrap();
        let d = |a: &str| Dest::parse(a).unwrap();
        assert!(names_self(&d("127.0.0.2:3128"), any));
        assert!(names_self(&d("localhost:3128"), any));
        assert!(!names_self(&d("10.0.0.1:3128"), any));
    }

    #[test]
    fn destinations_are_checked_by_the_proxy_s_rules() {
        let rules: Vec<DestRule> = vec!["*:80".parse().unwrap(), "127.0.0.1:8080".parse().unwrap()];
        let r = Some(rules.as_slice());
        assert!(check("GET http://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", r).is_ok());
        assert!(check("GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: x\r\n\r\n", r).is_ok());
        for raw in [
            "GET http://127.0.0.1:8081/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET http://localhost/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
            "GET http://example.com:22/ HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            assert_eq!(check(raw, r).unwrap_err(), DEST_DENIED, "{raw}");
        }
        for raw in [
            "GET http://2130706433/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET http://u@example.com/ HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            assert_eq!(check(raw, r).unwrap_err(), BAD_HOST, "{raw}");
        }
        let e = check(
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
            r,
        );
        assert_eq!(e.unwrap_err(), TUNNEL);
        assert_eq!(check("GET /a HTTP/1.0\r\n\r\n", r).unwrap_err(), NO_TARGET);
    }

    #[test]
    fn tokens_differ_between_instances() {
        let (a, b) = (via_token(), via_token());
        assert_ne!(a, b);
        assert!(
            a.starts_with("cacheoff-multiplier-") && a.len() == 36,
            "{a}"
        );
    }
}
