//! RFC 9110/9111 conformance of the reference proxy, one test per
//! behaviour, named after its section: a scripted origin on port 0, the
//! proxy (as a surrogate) in front of it, and assertions on what reached
//! the origin, what the client got and what was stored (seen as hits).
//! docs/proxy.md's conformance table points at these tests.

use crate::script;

use script::*;

const EARLY_HINTS: &str = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";

fn final_reply(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A field of the first interim reply.
fn interim_header(r: &Response, name: &str) -> Option<String> {
    let (_, v) = r.interim[0]
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
    Some(String::from_utf8_lossy(v).into_owned())
}

#[test]
fn rfc9110_15_2_interim_replies_reach_the_client_in_every_split_and_are_never_stored() {
    // The 103 and the 200 written in one piece, then split at every byte
    // of both: the proxy must parse what it already holds (a reply left
    // in its buffer used to wait for the read timeout).
    let split_at = format!("{EARLY_HINTS}{}", final_reply("hello")).len();
    // A read timeout no busy machine reaches: a split that waited for it
    // would take half a minute.
    let read_timeout = std::time::Duration::from_secs(30);
    let b = Bench::tuned(
        move |seen| {
            let wire = format!("{EARLY_HINTS}{}", final_reply("hello"));
            let at: usize = seen.path[1..].parse().unwrap();
            if at == 0 || at >= wire.len() {
                raw(wire)
            } else {
                pieces(vec![wire[..at].into(), wire[at..].into()])
            }
        },
        |c| c.read_timeout = read_timeout,
    );
    for at in 0..split_at {
        let started = std::time::Instant::now();
        let r = b.get(&format!("/{at}"), "");
        assert!(
            started.elapsed() < read_timeout / 3,
            "split at {at} waited for a timeout: {:?}",
            started.elapsed()
        );
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "hello"),
            "split at {at}"
        );
        assert_eq!(r.interim.len(), 1, "split at {at}");
        assert_eq!(r.interim[0].status, 103);
        assert_eq!(
            interim_header(&r, "link"),
            Some("</style.css>; rel=preload".to_string())
        );
    }
    // The stored reply carries no trace of the interim one.
    let hit = b.get("/0", "");
    assert_eq!((hit.x_cache().as_str(), hit.interim.len()), ("HIT", 0));
    assert_eq!(b.origin.count(), split_at);
}

#[test]
fn rfc9110_15_2_interim_replies_are_not_sent_to_http_1_0_clients() {
    let b = Bench::new(|_| raw(format!("{EARLY_HINTS}{}", final_reply("x"))));
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
    let seen = b.last();
    assert!(
        seen.header("x-secret").is_none() && seen.header("x-other").is_none(),
        "{seen:?}"
    );
    assert_eq!(seen.header("x-sent"), Some("yes"));
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

fn digits_origin() -> Bench {
    Bench::new(|seen| {
        if seen.header("range").is_some() {
            // An origin that honours ranges, so a relayed one is visible.
            return raw(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-0/10\r\nCache-Control: max-age=60\r\nContent-Length: 1\r\n\r\n0",
            );
        }
        ok(
            &format!(
                "Cache-Control: max-age=60\r\nETag: \"v1\"\r\nLast-Modified: {}\r\nContent-Type: text/plain\r\n",
                date(T0 - 100)
            ),
            "0123456789",
        )
    })
}

#[test]
fn rfc9110_14_a_range_of_a_stored_object_is_a_206() {
    let b = digits_origin();
    assert_eq!(b.get("/d", "").status, 200);
    let r = b.get("/d", "Range: bytes=2-4\r\n");
    assert_eq!((r.status, r.text().as_str()), (206, "234"));
    assert_eq!(r.header("content-range").as_deref(), Some("bytes 2-4/10"));
    assert_eq!(r.header("content-type").as_deref(), Some("text/plain"));
    let suffix = b.get("/d", "Range: bytes=-3\r\n");
    assert_eq!((suffix.status, suffix.text().as_str()), (206, "789"));
    let open = b.get("/d", "range: bytes=7-100\r\n");
    assert_eq!(
        open.header("content-range").as_deref(),
        Some("bytes 7-9/10")
    );
    // Overlapping ranges coalesce into one.
    let merged = b.get("/d", "Range: bytes=0-3,2-5\r\n");
    assert_eq!((merged.status, merged.text().as_str()), (206, "012345"));
    assert_eq!(b.origin.count(), 1, "every range came from the store");
}

#[test]
fn rfc9110_14_6_several_ranges_are_multipart_byteranges() {
    let b = digits_origin();
    b.get("/d", "");
    let r = b.get("/d", "Range: bytes=0-1, 8-\r\n");
    assert_eq!(r.status, 206);
    let ct = r.header("content-type").unwrap();
    let boundary = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("{ct}"));
    let body = r.text();
    let parts: Vec<&str> = body.split(&format!("--{boundary}")).collect();
    assert_eq!(parts.len(), 4, "{body}");
    assert!(parts[1].contains("Content-Range: bytes 0-1/10\r\n\r\n01\r\n"));
    assert!(parts[2].contains("Content-Range: bytes 8-9/10\r\n\r\n89\r\n"));
    assert!(parts[1].contains("Content-Type: text/plain"));
    assert_eq!(parts[3], "--\r\n");
}

#[test]
fn rfc9110_15_5_17_an_unsatisfiable_range_is_a_416_and_a_bad_one_is_ignored() {
    let b = digits_origin();
    b.get("/d", "");
    let r = b.get("/d", "Range: bytes=10-20\r\n");
    assert_eq!((r.status, r.body.len()), (416, 0));
    assert_eq!(r.header("content-range").as_deref(), Some("bytes */10"));
    for ignored in ["bytes=5-1", "lines=1-2", "bytes=x-"] {
        let r = b.get("/d", &format!("Range: {ignored}\r\n"));
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "0123456789"),
            "{ignored}"
        );
    }
    // Two Range lines are not one range.
    let two = b.get("/d", "Range: bytes=0-1\r\nRange: bytes=2-3\r\n");
    assert_eq!(two.status, 200);
}

#[test]
fn rfc9110_13_1_5_if_range_gives_the_part_only_of_the_same_object() {
    let b = digits_origin();
    b.get("/d", "");
    let part = |if_range: &str| {
        let r = b.get(
            "/d",
            &format!("Range: bytes=0-1\r\nIf-Range: {if_range}\r\n"),
        );
        (r.status, r.body.len())
    };
    assert_eq!(part("\"v1\""), (206, 2));
    assert_eq!(part("\"v0\""), (200, 10));
    // A weak tag never matches If-Range (strong comparison).
    assert_eq!(part("W/\"v1\""), (200, 10));
    assert_eq!(part(&date(T0 - 100)), (206, 2));
    assert_eq!(part(&date(T0 - 101)), (200, 10));
}

#[test]
fn rfc9111_3_3_a_range_miss_goes_to_the_origin_and_its_part_is_not_stored() {
    let b = digits_origin();
    let r = b.get("/p", "Range: bytes=0-0\r\n");
    assert_eq!((r.status, r.text().as_str()), (206, "0"));
    assert_eq!(b.last().header("range"), Some("bytes=0-0"));
    let whole = b.get("/p", "");
    assert_eq!((whole.status, whole.x_cache().as_str()), (200, "MISS"));
    assert_eq!(b.origin.count(), 2);
}

#[test]
fn collapsed_requests_share_their_fetchs_failure_instead_of_retrying_it() {
    // Seconds long, so that a busy machine cannot make one timeout look
    // like two.
    let read_timeout = std::time::Duration::from_secs(2);
    let b = Bench::tuned(
        |_| {
            std::thread::sleep(std::time::Duration::from_secs(8));
            ok("Cache-Control: max-age=60\r\n", "late")
        },
        |c| c.read_timeout = read_timeout,
    );
    let started = std::time::Instant::now();
    let clients: Vec<_> = (0..5)
        .map(|i| {
            let addr = b.proxy.addr();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(i * 20));
                let mut c = Client::connect(addr);
                c.write(b"GET /hang HTTP/1.1\r\nHost: o\r\n\r\n");
                (c.reply(false).status, std::time::Instant::now())
            })
        })
        .collect();
    for c in clients {
        let (status, at) = c.join().unwrap();
        assert_eq!(status, 504);
        // One read timeout, not one each after the other.
        assert!(at - started < read_timeout * 7 / 4, "{:?}", at - started);
    }
    assert_eq!(b.origin.count(), 1);
}

#[test]
fn rfc9111_4_4_unsafe_methods_invalidate_the_target_location_and_content_location() {
    let b = Bench::new(|seen| {
        if seen.method.as_str() == "POST" {
            return raw(
                "HTTP/1.1 201 Created\r\nLocation: /loc\r\nContent-Location: http://o-elsewhere/cl\r\nContent-Length: 0\r\n\r\n",
            );
        }
        if seen.method.as_str() == "PUT" {
            let origin = seen.header("host").unwrap().to_string();
            return raw(format!(
                "HTTP/1.1 204 No Content\r\nContent-Location: http://{origin}/cl\r\n\r\n"
            ));
        }
        ok("Cache-Control: max-age=600\r\n", "stored")
    });
    for p in ["/target", "/loc", "/cl"] {
        b.get(p, "");
        assert_eq!(b.get(p, "").x_cache(), "HIT", "{p}");
    }
    let r = b.send("POST /target HTTP/1.1\r\nHost: o\r\nContent-Length: 2\r\n\r\nhi");
    assert_eq!(r.status, 201);
    assert_eq!(b.get("/target", "").x_cache(), "MISS");
    assert_eq!(b.get("/loc", "").x_cache(), "MISS");
    // Another origin's URL is not this one's to invalidate.
    assert_eq!(b.get("/cl", "").x_cache(), "HIT");
    b.send("PUT /other HTTP/1.1\r\nHost: o\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(b.get("/cl", "").x_cache(), "MISS");
}

#[test]
fn rfc9110_9_3_1_a_get_with_a_body_is_forwarded_but_its_reply_not_stored() {
    let b = Bench::new(|_| ok("Cache-Control: max-age=600\r\n", "answer"));
    let r = b.send("GET /q HTTP/1.1\r\nHost: o\r\nContent-Length: 5\r\n\r\nquery");
    assert_eq!(r.status, 200);
    assert_eq!(b.last().body, b"query");
    assert_eq!(b.get("/q", "").x_cache(), "MISS");
}

/// An origin whose `/etag` has only an entity tag and `/both` both
/// validators; a matching condition gets a 304 with fresh headers.
fn validating_origin() -> Bench {
    Bench::new(|seen| {
        let inm = seen.header("if-none-match");
        let lm = format!("Last-Modified: {}\r\n", date(T0 - 100));
        let validators = if seen.path == "/both" {
            format!("ETag: \"v1\"\r\n{lm}")
        } else {
            "ETag: \"v1\"\r\n".to_string()
        };
        if inm == Some("\"v1\"") {
            return raw(format!(
                "HTTP/1.1 304 Not Modified\r\nDate: {}\r\nCache-Control: max-age=100\r\nX-Version: refreshed\r\n{validators}\r\n",
                date(T0)
            ));
        }
        ok(
            &format!("Cache-Control: max-age=10\r\nX-Version: first\r\n{validators}"),
            "entity",
        )
    })
}

#[test]
fn rfc9111_4_3_1_a_stale_copy_is_validated_by_its_entity_tag_and_date() {
    let b = validating_origin();
    b.get("/etag", "");
    b.get("/both", "");
    b.clock.advance(20);
    let r = b.get("/etag", "");
    let sent = b.last();
    assert_eq!(sent.header("if-none-match"), Some("\"v1\""));
    assert!(sent.header("if-modified-since").is_none());
    assert_eq!((r.status, r.text().as_str()), (200, "entity"));
    assert_eq!(r.x_cache(), "REVALIDATED");
    b.get("/both", "");
    let sent = b.last();
    assert_eq!(sent.header("if-none-match"), Some("\"v1\""));
    assert_eq!(
        sent.header("if-modified-since"),
        Some(date(T0 - 100).as_str())
    );
}

#[test]
fn rfc9111_4_3_4_a_304_updates_the_stored_headers_and_freshness() {
    let b = validating_origin();
    b.get("/etag", "");
    b.clock.advance(20);
    let r = b.get("/etag", "");
    assert_eq!(r.header("x-version").as_deref(), Some("refreshed"));
    assert_eq!(b.origin.count(), 2);
    // Fresh for 100 s from the 304 on, with the new header stored.
    b.clock.advance(50);
    let hit = b.get("/etag", "");
    assert_eq!(hit.x_cache(), "HIT");
    assert_eq!(hit.header("x-version").as_deref(), Some("refreshed"));
    assert_eq!(hit.header("cache-control").as_deref(), Some("max-age=100"));
    assert_eq!(b.origin.count(), 2);
}

/// An origin whose replies vary on `Accept-Language`, echoing it.
fn varying_origin(vary: &'static str) -> Bench {
    Bench::new(move |seen| {
        let lang = seen.header("accept-language").unwrap_or("none");
        ok(
            &format!("Cache-Control: max-age=60\r\nVary: {vary}\r\n"),
            lang,
        )
    })
}

#[test]
fn rfc9111_4_1_a_stored_variant_answers_only_requests_with_the_same_nominated_fields() {
    let b = varying_origin("Accept-Language");
    assert_eq!(b.get("/v", "Accept-Language: en\r\n").text(), "en");
    assert_eq!(b.get("/v", "Accept-Language: fr\r\n").text(), "fr");
    let en = b.get("/v", "accept-language: en\r\n");
    assert_eq!((en.x_cache().as_str(), en.text().as_str()), ("HIT", "en"));
    let fr = b.get("/v", "Accept-Language: fr\r\n");
    assert_eq!((fr.x_cache().as_str(), fr.text().as_str()), ("HIT", "fr"));
    // A request without the field matches only one stored without it.
    let none = b.get("/v", "");
    assert_eq!(
        (none.x_cache().as_str(), none.text().as_str()),
        ("MISS", "none")
    );
    assert_eq!(b.get("/v", "").x_cache(), "HIT");
    assert_eq!(b.origin.count(), 3);
}

#[test]
fn rfc9111_4_1_field_lines_are_combined_and_whitespace_normalised() {
    let b = varying_origin("Accept-Language");
    b.get("/v", "Accept-Language: en,fr\r\n");
    let same = b.get("/v", "Accept-Language: en\r\nAccept-Language: fr\r\n");
    assert_eq!(same.x_cache(), "HIT");
    let spaced = b.get("/v", "Accept-Language: en, fr\r\n");
    assert_eq!(spaced.x_cache(), "HIT");
}

#[test]
fn rfc9111_4_1_vary_star_is_never_served_from_the_store() {
    let b = varying_origin("*");
    b.get("/v", "Accept-Language: en\r\n");
    assert_eq!(b.get("/v", "Accept-Language: en\r\n").x_cache(), "MISS");
    assert_eq!(b.origin.count(), 2);
}

#[test]
fn rfc9110_13_1_2_if_none_match_gets_a_304_by_weak_comparison_and_overrides_the_date() {
    let b = validating_origin();
    b.get("/both", "");
    let r = |extra: &str| b.get("/both", extra).status;
    assert_eq!(r("If-None-Match: \"v1\"\r\n"), 304);
    assert_eq!(r("If-None-Match: W/\"v1\"\r\n"), 304);
    assert_eq!(r("If-None-Match: \"x\", \"v1\"\r\n"), 304);
    assert_eq!(r("If-None-Match: *\r\n"), 304);
    assert_eq!(r("If-None-Match: \"v2\"\r\n"), 200);
    // If-None-Match decides alone: a matching date does not make a 304.
    let both = format!(
        "If-None-Match: \"v2\"\r\nIf-Modified-Since: {}\r\n",
        date(T0)
    );
    assert_eq!(r(&both), 200);
    assert_eq!(r(&format!("If-Modified-Since: {}\r\n", date(T0))), 304);
    assert_eq!(b.origin.count(), 1);
}

#[test]
fn rfc9111_3_5_a_cookie_is_never_served_to_another_client() {
    let b = Bench::new(|seen| match seen.path.as_str() {
        "/implicit" => ok(
            "Set-Cookie: id=alice\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\n",
            "a",
        ),
        _ => ok(
            "Set-Cookie: id=alice\r\nCache-Control: public, max-age=60\r\n",
            "a",
        ),
    });
    let first = b.get("/implicit", "");
    assert_eq!(first.header("set-cookie").as_deref(), Some("id=alice"));
    let second = b.get("/implicit", "");
    assert_eq!(
        (
            second.x_cache().as_str(),
            second.header("set-cookie").as_deref()
        ),
        ("MISS", Some("id=alice"))
    );
    // Explicitly shared: stored, without the cookie.
    b.get("/shared", "");
    let hit = b.get("/shared", "");
    assert_eq!(
        (hit.x_cache().as_str(), hit.header("set-cookie")),
        ("HIT", None)
    );
}

#[test]
fn rfc9111_5_2_2_2_must_revalidate_is_never_served_stale_504_when_the_origin_is_down() {
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = down.clone();
    let b = Bench::new(move |_| {
        if d.load(std::sync::atomic::Ordering::SeqCst) {
            return raw("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
        }
        ok(
            "Cache-Control: max-age=10, must-revalidate\r\nETag: \"m\"\r\n",
            "m",
        )
    });
    b.get("/m", "");
    b.clock.advance(20);
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(b.get("/m", "").status, 504);
    // Even a client that accepts stale copies does not get this one.
    assert_eq!(b.get("/m", "Cache-Control: max-stale=600\r\n").status, 504);
}

#[test]
fn rfc5861_4_stale_if_error_serves_the_stale_copy_when_the_origin_fails() {
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = down.clone();
    let b = Bench::new(move |_| {
        if d.load(std::sync::atomic::Ordering::SeqCst) {
            return raw("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        }
        ok(
            "Cache-Control: max-age=10, stale-if-error=100\r\nETag: \"s\"\r\n",
            "kept",
        )
    });
    b.get("/s", "");
    b.clock.advance(50);
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = b.get("/s", "");
    assert_eq!((r.status, r.text().as_str()), (200, "kept"));
    // RFC 9211: it was forwarded, for a stale copy, and the origin failed.
    assert_eq!(
        r.header("Cache-Status").as_deref(),
        Some("cacheoff; fwd=stale; fwd-status=500; ttl=-40; detail=stale-if-error")
    );
    // Past the window: the origin's error.
    b.clock.advance(100);
    assert_eq!(b.get("/s", "").status, 500);
}

#[test]
fn rfc5861_3_stale_while_revalidate_serves_stale_and_refreshes_in_the_background() {
    let b = Bench::new(|seen| {
        if seen.header("if-none-match").is_some() {
            return raw(format!(
                "HTTP/1.1 304 Not Modified\r\nDate: {}\r\nCache-Control: max-age=10, stale-while-revalidate=30\r\nETag: \"w\"\r\n\r\n",
                date(T0 + 15)
            ));
        }
        ok(
            "Cache-Control: max-age=10, stale-while-revalidate=30\r\nETag: \"w\"\r\n",
            "w",
        )
    });
    b.get("/w", "");
    b.clock.advance(15);
    let stale = b.get("/w", "");
    assert_eq!((stale.status, stale.x_cache().as_str()), (200, "HIT"));
    // The background revalidation reaches the origin and freshens the copy:
    // its connection (the task's own) ends once the 304 is taken in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while b.origin.count() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let asked = b.last();
    assert_eq!(asked.header("if-none-match"), Some("\"w\""));
    while !b.origin.ended(asked.conn) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(b.origin.ended(asked.conn), "the revalidation never ended");
    let fresh = b.get("/w", "");
    assert_eq!(
        (fresh.x_cache().as_str(), fresh.header("age").as_deref()),
        ("HIT", Some("0"))
    );
    assert_eq!(b.origin.count(), 2);
}

#[test]
fn rfc9111_5_2_1_7_only_if_cached_gets_504_without_a_stored_copy() {
    let b = Bench::new(|_| ok("Cache-Control: max-age=60\r\n", "c"));
    let none = b.get("/c", "Cache-Control: only-if-cached\r\n");
    assert_eq!(none.status, 504);
    assert_eq!(
        none.header("Cache-Status").as_deref(),
        Some("cacheoff; detail=only-if-cached")
    );
    assert_eq!(b.origin.count(), 0);
    b.get("/c", "");
    assert_eq!(
        b.get("/c", "Cache-Control: only-if-cached\r\n").x_cache(),
        "HIT"
    );
}

#[test]
fn rfc9111_5_2_2_10_s_maxage_wins_over_max_age_for_a_shared_cache() {
    let b = Bench::new(|_| ok("Cache-Control: max-age=10, s-maxage=100\r\n", "s"));
    b.get("/s", "");
    b.clock.advance(50);
    assert_eq!(b.get("/s", "").x_cache(), "HIT");
}

#[test]
fn rfc9213_cdn_cache_control_governs_a_surrogate_and_stops_there() {
    let b = Bench::tuned(
        |_| {
            ok(
                "Cache-Control: no-store\r\nCDN-Cache-Control: max-age=100\r\n",
                "cdn",
            )
        },
        |c| c.targeted = cacheoff_cache::Targeted::cdn(),
    );
    let miss = b.get("/t", "");
    assert_eq!(miss.header("cdn-cache-control"), None);
    assert_eq!(miss.header("cache-control").as_deref(), Some("no-store"));
    b.clock.advance(50);
    let hit = b.get("/t", "");
    assert_eq!(
        (hit.x_cache().as_str(), hit.header("cdn-cache-control")),
        ("HIT", None)
    );
    // Without targeting, Cache-Control rules.
    let plain = Bench::new(|_| {
        ok(
            "Cache-Control: no-store\r\nCDN-Cache-Control: max-age=100\r\n",
            "cdn",
        )
    });
    plain.get("/t", "");
    assert_eq!(plain.get("/t", "").x_cache(), "MISS");
}

#[test]
fn rfc9112_6_no_transfer_encoding_trick_smuggles_a_request() {
    let b = Bench::new(|_| ok("Cache-Control: no-store\r\n", "r"));
    let smuggled = "25\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n";
    for (te, status) in [
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
            400,
        ),
        ("Transfer-Encoding: xchunked\r\n", 400),
        ("Transfer-Encoding: identity\r\n", 400),
        ("Transfer-Encoding: \r\n", 400),
        ("Transfer-Encoding: \"chunked\"\r\n", 400),
        ("Transfer-Encoding: chunked, identity\r\n", 400),
    ] {
        // With a Content-Length too: always 400, whatever the coding.
        let raw = format!("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n{te}\r\n{smuggled}");
        let mut c = b.client();
        c.write(raw.as_bytes());
        assert_eq!(c.reply(false).status, status, "{te:?} with a length");
        assert!(
            c.try_reply(false).is_none(),
            "{te:?}: the connection stays open"
        );
    }
    for (te, status) in [
        ("Transfer-Encoding: xchunked\r\n", 501),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            400,
        ),
        ("Transfer-Encoding: chunked, identity\r\n", 400),
    ] {
        let raw = format!("POST /x HTTP/1.1\r\nHost: x\r\n{te}\r\n{smuggled}");
        let mut c = b.client();
        c.write(raw.as_bytes());
        assert_eq!(c.reply(false).status, status, "{te:?}");
        assert!(
            c.try_reply(false).is_none(),
            "{te:?}: the connection stays open"
        );
    }
    assert_eq!(b.origin.count(), 0, "{:?}", b.origin.all());
}

#[test]
fn rfc9111_4_3_5_a_head_reply_freshens_the_stored_get_or_drops_it() {
    let version = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(1));
    let v = version.clone();
    let b = Bench::new(move |seen| {
        let n = v.load(std::sync::atomic::Ordering::SeqCst);
        let tag = format!("ETag: \"t{n}\"\r\nX-Seen: {}\r\n", seen.method.as_str());
        if seen.method.as_str() == "HEAD" {
            return raw(format!(
                "HTTP/1.1 200 OK\r\nDate: {}\r\nCache-Control: max-age=100\r\n{tag}Content-Length: 4\r\n\r\n",
                date(T0 + 20)
            ));
        }
        ok(&format!("Cache-Control: max-age=10\r\n{tag}"), "body")
    });
    b.get("/h", "");
    b.clock.advance(20);
    // Stale: the HEAD goes to the origin, and its reply freshens the GET.
    let head = b.send("HEAD /h HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(head.status, 200);
    let hit = b.get("/h", "");
    assert_eq!(
        (hit.x_cache().as_str(), hit.text().as_str()),
        ("HIT", "body")
    );
    assert_eq!(hit.header("x-seen").as_deref(), Some("HEAD"));
    // A HEAD describing another representation drops the stored one.
    b.clock.advance(200);
    version.store(2, std::sync::atomic::Ordering::SeqCst);
    b.send("HEAD /h HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(b.get("/h", "").x_cache(), "MISS");
}
