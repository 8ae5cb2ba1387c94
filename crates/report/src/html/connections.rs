//! How robots connected: the protocol, TLS handshakes apart from response
//! times, and a forward proxy's `CONNECT` tunnels (inside which no hit
//! can be seen). Shown for runs that used TLS, HTTP/2 or tunnels.

use super::esc;
use super::tables::table;
use cacheoff_stats::{Entry, Latency};
use cacheoff_workload::{HttpVersion, Workload};
use std::fmt::Write;

pub(super) fn section(o: &mut String, w: &Workload, e: &Entry) {
    let c = e.raw_counts();
    let r = &w.robots;
    if !r.tls && r.http == HttpVersion::Http1 && c.tunnels == 0 {
        return;
    }
    let _ = write!(
        o,
        "<h2 id=\"connections\">Connections</h2><p>Robots spoke {}{}: {} connections for {} transactions.</p>",
        esc(&r.http.to_string()),
        if r.tls { " over TLS" } else { "" },
        c.conns_opened,
        e.xacts
    );
    if c.h2_refused > 0 {
        let _ = write!(
            o,
            "<p class=\"warn\">{} connections were answered in HTTP/1.1: the server did not choose h2 over ALPN.</p>",
            c.h2_refused
        );
    }
    if c.tunnels > 0 {
        o.push_str("<p>Through the forward proxy, HTTPS went through CONNECT tunnels: the proxy relays bytes it cannot read, so every reply came from the origin server and no hit could be seen.</p>");
    }
    table(o, &["", "count", "mean", "p50", "p99", "max"]);
    let row = |o: &mut String, what: String, l: &Latency| {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{:.3} ms</td><td>{:.3} ms</td><td>{:.3} ms</td><td>{:.3} ms</td></tr>",
            esc(&what),
            l.count,
            l.mean,
            l.p50,
            l.p99,
            l.max
        );
    };
    if c.tls_handshakes > 0 {
        let resumed = c.tls_resumed as f64 * 100.0 / c.tls_handshakes as f64;
        row(
            o,
            format!("TLS handshakes ({resumed:.1}% resumed)"),
            &e.tls_handshake_ms,
        );
    }
    if c.tunnels > 0 {
        row(o, "CONNECT tunnels".into(), &e.tunnel_ms);
    }
    o.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    #[test]
    fn an_https_run_shows_its_handshakes_and_a_plain_one_nothing() {
        let mut w = cacheoff_workload::load("simple", &Default::default()).unwrap();
        let mut e = sample::entry("total", 30, 10, 0);
        let mut o = String::new();
        section(&mut o, &w, &e);
        assert!(o.is_empty(), "{o}");
        w.robots.tls = true;
        w.robots.http = HttpVersion::Http2;
        let mut c = e.raw_counts();
        c.conns_opened = 4;
        c.tls_handshakes = 4;
        c.tls_resumed = 1;
        e.counts = Some(c);
        e.tls_handshake_ms = Latency {
            count: 4,
            mean: 1.5,
            p50: 1.2,
            p99: 3.0,
            max: 3.0,
        };
        section(&mut o, &w, &e);
        assert!(
            o.contains("HTTP/2 over TLS: 4 connections for 40 transactions"),
            "{o}"
        );
        assert!(
            o.contains("TLS handshakes (25.0% resumed)</td><td>4</td><td>1.500 ms"),
            "{o}"
        );
        assert!(!o.contains("CONNECT"));
    }
}
