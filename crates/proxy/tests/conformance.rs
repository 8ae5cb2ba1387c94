//! RFC 9110/9111 conformance of the reference proxy, one test per
//! behaviour, named after its section: a scripted origin on port 0, the
//! proxy (as a surrogate) in front of it, and assertions on what reached
//! the origin, what the client got and what was stored (seen as hits).
//! docs/proxy.md's conformance table points at these tests.

mod script;

use script::*;

const EARLY_HINTS: &str = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";

fn final_reply(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn rfc9110_15_2_interim_replies_reach_the_client_in_every_split_and_are_never_stored() {
    // The 103 and the 200 written in one piece, then split at every byte
    // of both: the proxy must parse what it already holds (a reply left
    // in its buffer used to wait for the read timeout).
    let raw = format!("{EARLY_HINTS}{}", final_reply("hello"));
    let split_at = raw.len();
    let b = Bench::new(move |seen| {
        let raw = format!("{EARLY_HINTS}{}", final_reply("hello"));
        let at: usize = seen.head.path()[1..].parse().unwrap();
        if at == 0 || at >= raw.len() {
            whole(raw)
        } else {
            vec![raw[..at].into(), raw[at..].into()]
        }
    });
    let started = std::time::Instant::now();
    for at in 0..split_at {
        let r = b.get(&format!("/{at}"), "");
        assert_eq!(
            (r.status, r.body().as_str()),
            (200, "hello"),
            "split at {at}"
        );
        assert_eq!(r.interim.len(), 1, "split at {at}");
        assert_eq!(r.interim[0].status, 103);
        assert_eq!(
            header_of(&r.interim[0].headers, "link").as_deref(),
            Some("</style.css>; rel=preload")
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "some split waited for a timeout: {:?}",
        started.elapsed()
    );
    // The stored reply carries no trace of the interim one.
    let hit = b.get("/0", "");
    assert_eq!((hit.x_cache().as_str(), hit.interim.len()), ("HIT", 0));
    assert_eq!(b.origin.count(), split_at);
}

#[test]
fn rfc9110_15_2_interim_replies_are_not_sent_to_http_1_0_clients() {
    let b = Bench::new(|_| whole(format!("{EARLY_HINTS}{}", final_reply("x"))));
    let r = b.send("GET /a HTTP/1.0\r\nHost: o\r\n\r\n");
    assert_eq!((r.status, r.interim.len()), (200, 0));
}

#[test]
fn rfc9110_7_6_1_fields_that_connection_nominates_go_no_further() {
    let b = Bench::new(|_| {
        ok(
            "Cache-Control: max-age=60\r\nConnection: X-Hop, keep-alive\r\nX-Hop: origin-side\r\nX-Kept: yes\r\n",
            "body",
        )
    });
    let r = b.get(
        "/a",
        "Connection: x-secret\r\nX-Secret: client-side\r\nConnection: X-Other\r\nX-Other: 1\r\nX-Sent: yes\r\n",
    );
    let seen = b.origin.last();
    assert!(!seen.has("x-secret") && !seen.has("x-other"), "{seen:?}");
    assert_eq!(seen.header("x-sent").as_deref(), Some("yes"));
    assert_eq!(r.header("x-hop"), None);
    assert_eq!(r.header("x-kept").as_deref(), Some("yes"));
    let hit = b.get("/a", "");
    assert_eq!(hit.x_cache(), "HIT");
    assert_eq!(
        (hit.header("x-hop"), hit.header("x-kept").as_deref()),
        (None, Some("yes"))
    );
}

#[test]
fn rfc9111_5_1_an_age_from_upstream_is_passed_on_and_counts_against_freshness() {
    let b = Bench::new(|_| ok("Cache-Control: max-age=600\r\nAge: 100\r\n", "old"));
    let miss = b.get("/a", "");
    assert_eq!(miss.header("age").as_deref(), Some("100"));
    b.clock.advance(200);
    let hit = b.get("/a", "");
    assert_eq!(
        (hit.x_cache().as_str(), hit.header("age").as_deref()),
        ("HIT", Some("300"))
    );
    // 100 + 501 > 600: stale, although it was stored only 501 s ago.
    b.clock.advance(301);
    let _ = b.get("/a", "");
    assert_eq!(b.origin.count(), 2);
}
