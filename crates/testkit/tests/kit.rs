//! The kit against itself: what the scripted origin records and answers,
//! and what the client reads of each framing, in-process on port 0.

use cacheoff_http::Framing;
use cacheoff_testkit::{
    accepting, binary, chunked, closed_now, closed_within, endless, exchange, free_port, hold,
    origin, paced, pieces, raw_and_close, read_all, until, Client, Reply,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn the_origin_answers_by_path_and_records_every_request_in_order() {
    let o = origin(|seen| Reply::ok(&[("X-Path", &seen.path)], &format!("#{}", seen.n)));
    o.script("/own", Arc::new(|_| Reply::new(404, &[], "mine")));
    let addr = o.addr();
    let mut c = Client::connect(addr);
    // Pipelined, with a chunked body and one by its length.
    c.write(
        b"GET /a?q=1 HTTP/1.1\r\nHost: o\r\n\r\n\
          POST http://o/a HTTP/1.1\r\nHost: o\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n\
          PUT /own HTTP/1.1\r\nHost: o\r\nContent-Length: 3\r\n\r\nabc",
    );
    let (a1, a2, own) = (c.reply(false), c.reply(false), c.reply(false));
    assert_eq!((a1.status, a1.text().as_str()), (200, "#1"));
    assert_eq!(a1.header("x-path").as_deref(), Some("/a"));
    assert_eq!(a2.text(), "#2");
    assert_eq!((own.status, own.text().as_str()), (404, "mine"));
    // A HEAD's reply has the length and no body.
    let head = exchange(addr, b"HEAD /h HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(head.header("content-length").as_deref(), Some("2"));
    assert!(head.body.is_empty());
    let all = o.all();
    let seen: Vec<(&str, &str, &[u8], usize, usize)> = all
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str(), &s.body[..], s.n, s.conn))
        .collect();
    assert_eq!(
        seen,
        [
            ("GET", "/a", &b""[..], 1, 0),
            ("POST", "/a", &b"hi"[..], 2, 0),
            ("PUT", "/own", &b"abc"[..], 1, 0),
            ("HEAD", "/h", &b""[..], 1, 1),
        ]
    );
    assert_eq!(all[0].target, "/a?q=1");
    assert_eq!(o.seen("/a").len(), 2);
    assert_eq!((o.count(), o.connections()), (4, 2));
    assert!(!o.ended(0));
    drop(c);
    until(
        "the first connection's end",
        Duration::from_secs(60),
        || o.ended(0),
    );
}

#[test]
fn bodies_stay_out_of_the_log_when_asked_but_scripts_get_them() {
    let o = origin(|seen| Reply::ok(&[], &seen.body.len().to_string()));
    o.forget_bodies();
    let r = exchange(
        o.addr(),
        b"POST /p HTTP/1.1\r\nHost: o\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(r.text(), "5");
    assert!(o.all()[0].body.is_empty());
}

#[test]
fn a_body_of_any_bytes_arrives_whole_with_its_length() {
    // Every byte value, past what one read takes.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let body = bytes.clone();
    let o = origin(move |_| binary(200, &[("Content-Type", "image/png")], body.clone()));
    let r = exchange(o.addr(), b"GET /img HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length").as_deref(), Some("70000"));
    assert_eq!(r.header("content-type").as_deref(), Some("image/png"));
    assert!(r.header("date").is_some());
    assert!(r.body == bytes);
    let head = exchange(o.addr(), b"HEAD /img HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(head.header("content-length").as_deref(), Some("70000"));
    assert!(head.body.is_empty());
}

#[test]
fn a_listener_accepts_and_a_free_port_does_not() {
    let o = origin(|_| Reply::Close);
    assert!(accepting(o.addr()));
    until("the probe's connection", Duration::from_secs(60), || {
        o.connections() == 1
    });
    assert!(!accepting(SocketAddr::from(([127, 0, 0, 1], free_port()))));
}

#[test]
fn interim_replies_pieces_and_every_framing_reach_the_client_whole() {
    let body = b"0123456789".repeat(100);
    let wire = [
        &b"HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Cache: MISS from parent\r\nX-Cache: HIT\r\n",
        b"Cache-Status: parent; fwd=uri-miss, here; hit\r\nCache-Status: last; hit\r\n\r\n",
        &chunked(&body, 333),
    ]
    .concat();
    let (first, rest) = wire.split_at(50);
    let pieces_of = (first.to_vec(), rest.to_vec());
    let o = origin(move |seen| match seen.path.as_str() {
        "/pieces" => pieces(vec![pieces_of.0.clone(), pieces_of.1.clone()]),
        "/close" => raw_and_close("HTTP/1.0 200 OK\r\n\r\nuntil the end"),
        _ => Reply::Close,
    });
    let r = exchange(o.addr(), b"GET /pieces HTTP/1.1\r\nHost: o\r\n\r\n");
    assert_eq!(r.interim.len(), 1);
    assert_eq!(r.interim[0].status, 103);
    assert_eq!((r.head.framing, r.body.clone()), (Framing::Chunked, body));
    assert!(r.head_text().starts_with("HTTP/1.1 200 OK\r\n"));
    assert_eq!(r.values("x-cache").len(), 2);
    assert_eq!(
        r.header("x-cache").as_deref(),
        Some("MISS from parent, HIT")
    );
    assert_eq!(r.x_cache(), "HIT");
    assert_eq!(
        r.cache_status(),
        ["parent; fwd=uri-miss", "here; hit", "last; hit"]
    );
    assert_eq!(r.own_status(), "last; hit");
    let mut c = Client::connect(o.addr());
    let r = c.send(b"GET /close HTTP/1.0\r\n\r\n");
    assert_eq!(
        (r.head.framing, r.text().as_str()),
        (Framing::UntilClose, "until the end")
    );
    assert!(c.try_reply(false).is_none());
    // No answer: the connection ends with nothing.
    let mut c = Client::connect(o.addr());
    c.write(b"GET /nothing HTTP/1.1\r\nHost: o\r\n\r\n");
    assert!(c.next(false).unwrap().is_none());
    assert_eq!(read_all(o.addr(), b"GET /x HTTP/1.1\r\n\r\n").unwrap(), b"");
}

#[test]
fn paced_held_and_endless_replies_take_their_time() {
    let pause = Duration::from_millis(300);
    let o = origin(move |seen| match seen.path.as_str() {
        "/late" => paced(vec![
            (
                pause,
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".to_vec(),
            ),
            (pause, b"ok".to_vec()),
        ]),
        "/hold" => hold(Duration::from_secs(60)),
        _ => endless(
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"x",
            Duration::from_millis(10),
            pause,
        ),
    });
    let started = Instant::now();
    assert_eq!(
        exchange(o.addr(), b"GET /late HTTP/1.1\r\n\r\n").text(),
        "ok"
    );
    assert!(started.elapsed() >= pause * 2);
    // Held: nothing comes while the client is there, and the origin
    // lets go once it leaves.
    let mut c = Client::connect(o.addr());
    c.write(b"GET /hold HTTP/1.1\r\n\r\n");
    let (closed, got) = closed_within(&mut c.s, Duration::from_millis(300));
    assert!(!closed && got.is_empty());
    assert!(!closed_now(&c.s));
    drop(c);
    until("the held connection's end", Duration::from_secs(60), || {
        o.ended(1)
    });
    // Endless until its limit, then closed.
    let got = read_all(o.addr(), b"GET /endless HTTP/1.1\r\n\r\n").unwrap();
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n\r\nxx"), "{got:?}");
}

#[test]
fn a_test_alone_runs_in_a_process_without_the_other_tests() {
    if !cacheoff_testkit::alone!(a_test_alone_runs_in_a_process_without_the_other_tests) {
        return;
    }
    // The harness's main thread and this test's: no other test runs here.
    assert!(
        cacheoff_testkit::threads() <= 2,
        "{} threads",
        cacheoff_testkit::threads()
    );
}

#[test]
#[should_panic(expected = "in a process of its own")]
fn a_test_alone_that_did_not_run_fails() {
    cacheoff_testkit::alone("no_such_test");
}
