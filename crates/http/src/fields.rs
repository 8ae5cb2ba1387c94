//! Which header fields describe one connection rather than the message
//! (hop-by-hop), each list once with the RFC section that makes it, for
//! every role that passes messages on or stores them: the proxy and its
//! cache, the Multiplier, HTTP/2's robots and origin servers. Names are
//! compared case-insensitively (RFC 9110 §5.1).

/// RFC 9110 §7.6.1: `Connection` itself and the fields intermediaries
/// remove before forwarding whether or not `Connection` names them.
pub const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// RFC 9110 §11.7: proxy authentication is between a client and the
/// proxy next to it (the challenge is for "the next outbound client", the
/// credentials for the proxy that asked); RFC 9111 §3.1: a cache MUST NOT
/// store them. No cacheoff hop asks for proxy credentials, so a client's
/// are for nobody behind it.
pub const PROXY_AUTHENTICATION: [&str; 3] = [
    "proxy-authenticate",
    "proxy-authentication-info",
    "proxy-authorization",
];

/// RFC 9110 §6.6.2: announces the fields of a chunked body's trailer
/// section. Every cacheoff hop removes the chunked coding and drops the
/// trailers (RFC 9112 §7.1.2 allows it), so past it the announcement
/// would be false.
pub const TRAILER: &str = "trailer";

/// RFC 9113 §8.2.2: the connection-specific fields an HTTP/2 message MUST
/// NOT carry (§7.6.1's list but `TE`, which [`h2_forbidden`] allows as
/// `trailers`).
pub const H2_CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
];

/// Whether `name` is one of `list` (lowercase names), in any case.
pub fn is_one_of(name: &str, list: &[&str]) -> bool {
    list.iter().any(|f| name.eq_ignore_ascii_case(f))
}

/// Whether a field never goes past the hop that received it, nor into a
/// cache: [`CONNECTION_SPECIFIC`], [`PROXY_AUTHENTICATION`], [`TRAILER`].
/// Fields a message's `Connection` names are hop-by-hop too
/// ([`hop_only`]).
pub fn is_hop_by_hop(name: &str) -> bool {
    is_one_of(name, &CONNECTION_SPECIFIC)
        || is_one_of(name, &PROXY_AUTHENTICATION)
        || name.eq_ignore_ascii_case(TRAILER)
}

/// The field names one `Connection` value lists (RFC 9110 §7.6.1:
/// `#connection-option`), as sent: empty list elements and names that are
/// not UTF-8 are skipped.
pub fn connection_named(value: &[u8]) -> impl Iterator<Item = &str> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
        .filter_map(|t| std::str::from_utf8(t).ok())
}

/// Every field name a message's `Connection` lines list, lowercase.
pub fn nominated<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<String> {
    headers
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| connection_named(v))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether a field stops at this hop: hop-by-hop by definition
/// ([`is_hop_by_hop`]) or named by the message's `Connection`
/// (`nominated`, from [`nominated`]): RFC 9110 §7.6.1 has an intermediary
/// remove both before forwarding, and RFC 9111 §3.1 lets a cache do so
/// before storing.
pub fn hop_only(name: &str, nominated: &[String]) -> bool {
    is_hop_by_hop(name) || nominated.iter().any(|n| name.eq_ignore_ascii_case(n))
}

/// Whether an HTTP/2 message may not carry this field (RFC 9113 §8.2.2):
/// the connection-specific ones, and `TE` with any value but `trailers`.
/// An HTTP/1.1 message's fields pass through this on their way into
/// HTTP/2, or the peer treats the message as malformed.
pub fn h2_forbidden(name: &str, value: &[u8]) -> bool {
    is_one_of(name, &H2_CONNECTION_SPECIFIC)
        || (name.eq_ignore_ascii_case("te") && value != b"trailers")
}

/// What a `Connection` line (or the legacy `Proxy-Connection` that
/// HTTP/1.0 clients send instead) says about persistence (RFC 9112 §9.3):
/// `close` ends the connection after this message, `keep-alive` keeps an
/// HTTP/1.0 one open; `None` for other fields and other options.
pub fn persistence(name: &str, value: &[u8]) -> Option<bool> {
    if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("proxy-connection") {
        return None;
    }
    let listed = |option: &str| connection_named(value).any(|o| o.eq_ignore_ascii_case(option));
    if listed("close") {
        Some(false)
    } else if listed("keep-alive") {
        Some(true)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9110_7_6_1_connection_specific_fields_are_hop_by_hop_in_any_case() {
        for name in [
            "Connection",
            "PROXY-CONNECTION",
            "keep-alive",
            "Keep-Alive",
            "TE",
            "te",
            "Transfer-Encoding",
            "upgrade",
        ] {
            assert!(is_hop_by_hop(name), "{name}");
        }
        for name in [
            "Host",
            "Cache-Control",
            "Via",
            "Content-Type",
            "Age",
            "Expect",
            "Tee",
        ] {
            assert!(!is_hop_by_hop(name), "{name}");
        }
    }

    #[test]
    fn rfc9111_3_1_proxy_authentication_fields_are_never_passed_on_or_stored() {
        for name in [
            "Proxy-Authenticate",
            "proxy-authentication-info",
            "PROXY-AUTHORIZATION",
        ] {
            assert!(is_hop_by_hop(name), "{name}");
            assert!(hop_only(name, &[]), "{name}");
        }
        // The origin's own authentication is end to end.
        for name in ["WWW-Authenticate", "Authorization", "Authentication-Info"] {
            assert!(!is_hop_by_hop(name), "{name}");
        }
    }

    #[test]
    fn rfc9110_6_6_2_trailer_announcements_stop_where_the_trailers_do() {
        assert!(is_hop_by_hop("Trailer"));
        assert!(is_hop_by_hop("TRAILER"));
        // The trailer fields it names are not hop-by-hop by themselves.
        assert!(!is_hop_by_hop("Trailers"));
        assert!(!is_hop_by_hop("Server-Timing"));
    }

    #[test]
    fn connection_names_its_own_options_and_the_fields_they_cover() {
        let v = b" keep-alive ,X-Secret,, \tUpgrade,";
        assert_eq!(
            connection_named(v).collect::<Vec<_>>(),
            ["keep-alive", "X-Secret", "Upgrade"]
        );
        assert_eq!(connection_named(b"").count(), 0);
        assert_eq!(connection_named(b" , ,").count(), 0);
        // A name that is not UTF-8 names nothing the caller could hold.
        assert_eq!(connection_named(b"\xff\xfe, a").collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn rfc9110_7_6_1_fields_connection_nominates_stop_here_in_any_case() {
        let headers: [(&str, &[u8]); 4] = [
            ("Connection", b"close, X-Secret"),
            ("X-Secret", b"1"),
            ("CONNECTION", b"x-other"),
            ("X-Kept", b"2"),
        ];
        let named = nominated(headers);
        assert_eq!(named, ["close", "x-secret", "x-other"]);
        assert!(hop_only("x-secret", &named));
        assert!(hop_only("X-SECRET", &named));
        assert!(hop_only("X-Other", &named));
        assert!(!hop_only("X-Kept", &named));
        assert!(!hop_only("X-Secret", &[]));
        // A field named only in another field's value is not nominated.
        let headers: [(&str, &[u8]); 1] = [("Vary", b"X-Secret")];
        assert!(nominated(headers).is_empty());
    }

    #[test]
    fn rfc9113_8_2_2_h2_forbids_connection_fields_and_te_but_trailers() {
        for name in [
            "Connection",
            "Keep-Alive",
            "proxy-connection",
            "TRANSFER-ENCODING",
            "Upgrade",
        ] {
            assert!(h2_forbidden(name, b"x"), "{name}");
        }
        assert!(!h2_forbidden("TE", b"trailers"));
        assert!(!h2_forbidden("te", b"trailers"));
        assert!(h2_forbidden("TE", b"gzip"));
        assert!(h2_forbidden("te", b"trailers, deflate"));
        // Fields HTTP/1.1 hops drop but HTTP/2 carries.
        for name in ["Trailer", "Proxy-Authorization", "Content-Length", "Host"] {
            assert!(!h2_forbidden(name, b"x"), "{name}");
        }
    }

    #[test]
    fn rfc9112_9_3_close_wins_and_keep_alive_keeps_from_either_field() {
        assert_eq!(persistence("Connection", b"close"), Some(false));
        assert_eq!(persistence("connection", b"Keep-Alive"), Some(true));
        assert_eq!(persistence("Proxy-Connection", b"keep-alive"), Some(true));
        assert_eq!(persistence("Connection", b"keep-alive, CLOSE"), Some(false));
        assert_eq!(persistence("Connection", b"Upgrade"), None);
        assert_eq!(persistence("Connection", b"closed"), None);
        assert_eq!(persistence("Keep-Alive", b"close"), None);
    }
}
