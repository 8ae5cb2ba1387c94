//! The origin address map in each product's own form: pure functions from
//! an [`AddrMap`] to configuration text, the values of the template
//! variables of the same names (`{{squid_origins}}`, ...). Origin `i`
//! (from 1, in the map's order) is called `origin<i>` wherever a product
//! needs an identifier (peer, backend, upstream); the names themselves
//! only appear as hostnames to match.

use cacheoff_workload::AddrMap;
use std::fmt::Write as _;

/// Refuses names that are not hostnames (letters, digits, `-` and `.`),
/// so none can break out of the configurations they are written into.
pub fn check_names(map: &AddrMap) -> Result<(), String> {
    for name in map.names() {
        let ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !ok {
            return Err(format!("origin name {name:?} is not a hostname"));
        }
    }
    Ok(())
}

fn each(map: &AddrMap) -> impl Iterator<Item = (usize, &str, std::net::SocketAddr)> {
    map.entries()
        .iter()
        .enumerate()
        .map(|(i, (n, a))| (i + 1, n.as_str(), *a))
}

/// Squid accelerator peers: per origin a `cache_peer … originserver`, an
/// ACL of its name and `cache_peer_access` by it; then the ACL
/// `cacheoff_origins` of every name (for `http_access`).
pub fn squid_origins(map: &AddrMap) -> String {
    let mut o = String::new();
    for (i, name, a) in each(map) {
        let _ = writeln!(
            o,
            "cache_peer {} parent {} 0 no-query no-digest originserver name=origin{i}",
            a.ip(),
            a.port()
        );
        let _ = writeln!(o, "acl origin{i}_host dstdomain {name}");
        let _ = writeln!(o, "cache_peer_access origin{i} allow origin{i}_host");
        let _ = writeln!(o, "cache_peer_access origin{i} deny all");
    }
    for name in map.names() {
        let _ = writeln!(o, "acl cacheoff_origins dstdomain {name}");
    }
    o
}

/// One VCL backend per origin.
pub fn varnish_backends(map: &AddrMap) -> String {
    let mut o = String::new();
    for (i, name, a) in each(map) {
        let _ = writeln!(
            o,
            "backend origin{i} {{ # {name}\n    .host = \"{}\";\n    .port = \"{}\";\n}}",
            a.ip(),
            a.port()
        );
    }
    o
}

/// VCL for `vcl_recv` (indented for it): the backend of the name in
/// `req.http.host` (compared as is: the template lower-cases it and drops
/// a port first), a synthetic 404 for any other name.
pub fn varnish_routing(map: &AddrMap) -> String {
    let mut o = String::new();
    for (i, name, _) in each(map) {
        let kw = if i == 1 { "    if" } else { " elsif" };
        let _ = write!(
            o,
            "{kw} (req.http.host == \"{name}\") {{\n        set req.backend_hint = origin{i};\n    }}"
        );
    }
    let _ = writeln!(
        o,
        " else {{\n        return (synth(404, \"Unknown origin server\"));\n    }}"
    );
    o
}

/// The entries of an nginx `map $host $var { … }` block: each name to its
/// upstream.
pub fn nginx_origin_map(map: &AddrMap) -> String {
    let mut o = String::new();
    for (i, name, _) in each(map) {
        let _ = writeln!(o, "        {name} origin{i};");
    }
    o
}

/// One nginx `upstream` per origin, with idle connections kept.
pub fn nginx_upstreams(map: &AddrMap) -> String {
    let mut o = String::new();
    for (i, name, a) in each(map) {
        let _ = writeln!(
            o,
            "    upstream origin{i} {{ # {name}\n        server {a};\n        keepalive 64;\n    }}"
        );
    }
    o
}

/// Traffic Server `remap.config`: one `map` rule per origin name.
pub fn ats_remap(map: &AddrMap) -> String {
    let mut o = String::new();
    // HTTPS from robots (a `tls` port) reaches the same origins in the clear.
    for (_, name, a) in each(map) {
        let _ = writeln!(o, "map http://{name}/ http://{a}/");
        let _ = writeln!(o, "map https://{name}/ http://{a}/");
    }
    o
}

/// Entries of h2o's `hosts:` map (YAML, indented for it): per origin
/// name, everything proxied to its server with the Host kept.
pub fn h2o_hosts(map: &AddrMap) -> String {
    let mut o = String::new();
    for (_, name, a) in each(map) {
        let _ = writeln!(
            o,
            "  \"{name}\":\n    paths:\n      \"/\":\n        proxy.reverse.url: \"http://{a}/\"\n        proxy.preserve-host: ON"
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> AddrMap {
        AddrMap::parse("s1.bench.tst 127.2.0.1:8080\ns2.bench.tst 127.2.0.2:8081\n").unwrap()
    }

    #[test]
    fn squid_peers_route_each_name_to_its_server() {
        assert_eq!(
            squid_origins(&map()),
            "cache_peer 127.2.0.1 parent 8080 0 no-query no-digest originserver name=origin1\n\
             acl origin1_host dstdomain s1.bench.tst\n\
             cache_peer_access origin1 allow origin1_host\n\
             cache_peer_access origin1 deny all\n\
             cache_peer 127.2.0.2 parent 8081 0 no-query no-digest originserver name=origin2\n\
             acl origin2_host dstdomain s2.bench.tst\n\
             cache_peer_access origin2 allow origin2_host\n\
             cache_peer_access origin2 deny all\n\
             acl cacheoff_origins dstdomain s1.bench.tst\n\
             acl cacheoff_origins dstdomain s2.bench.tst\n"
        );
    }

    #[test]
    fn varnish_has_a_backend_per_server_and_routes_by_host() {
        assert_eq!(
            varnish_backends(&map()),
            "backend origin1 { # s1.bench.tst\n    .host = \"127.2.0.1\";\n    .port = \"8080\";\n}\n\
             backend origin2 { # s2.bench.tst\n    .host = \"127.2.0.2\";\n    .port = \"8081\";\n}\n"
        );
        assert_eq!(
            varnish_routing(&map()),
            "    if (req.http.host == \"s1.bench.tst\") {\n        set req.backend_hint = origin1;\n    } \
             elsif (req.http.host == \"s2.bench.tst\") {\n        set req.backend_hint = origin2;\n    } \
             else {\n        return (synth(404, \"Unknown origin server\"));\n    }\n"
        );
    }

    #[test]
    fn nginx_maps_hosts_to_upstreams() {
        assert_eq!(
            nginx_origin_map(&map()),
            "        s1.bench.tst origin1;\n        s2.bench.tst origin2;\n"
        );
        assert_eq!(
            nginx_upstreams(&map()),
            "    upstream origin1 { # s1.bench.tst\n        server 127.2.0.1:8080;\n        keepalive 64;\n    }\n\
             \x20   upstream origin2 { # s2.bench.tst\n        server 127.2.0.2:8081;\n        keepalive 64;\n    }\n"
        );
    }

    #[test]
    fn traffic_server_remaps_each_name() {
        assert_eq!(
            ats_remap(&map()),
            "map http://s1.bench.tst/ http://127.2.0.1:8080/\nmap https://s1.bench.tst/ http://127.2.0.1:8080/\n\
             map http://s2.bench.tst/ http://127.2.0.2:8081/\nmap https://s2.bench.tst/ http://127.2.0.2:8081/\n"
        );
    }

    #[test]
    fn h2o_has_a_host_per_name_keeping_the_host() {
        assert_eq!(
            h2o_hosts(&map()),
            "  \"s1.bench.tst\":\n    paths:\n      \"/\":\n        proxy.reverse.url: \"http://127.2.0.1:8080/\"\n        proxy.preserve-host: ON\n\
             \x20 \"s2.bench.tst\":\n    paths:\n      \"/\":\n        proxy.reverse.url: \"http://127.2.0.2:8081/\"\n        proxy.preserve-host: ON\n"
        );
    }

    #[test]
    fn ipv6_servers_keep_their_brackets_where_a_port_follows() {
        let m = AddrMap::parse("s1.bench.tst [::1]:8080\n").unwrap();
        assert!(h2o_hosts(&m).contains("http://[::1]:8080/"));
        assert!(ats_remap(&m).contains("http://[::1]:8080/"));
        assert!(nginx_upstreams(&m).contains("server [::1]:8080;"));
        assert!(varnish_backends(&m).contains(".host = \"::1\";"));
        assert!(squid_origins(&m).contains("cache_peer ::1 parent 8080 "));
    }

    #[test]
    fn names_that_are_not_hostnames_are_refused() {
        assert!(check_names(&map()).is_ok());
        let bad = AddrMap::parse("a\"b 127.0.0.1:1\n").unwrap();
        assert_eq!(
            check_names(&bad).unwrap_err(),
            "origin name \"a\\\"b\" is not a hostname"
        );
    }
}
