//! Validation (RFC 9111 §4.3): conditional requests the cache sends, the
//! 304s it gets and how they update the stored response, and client
//! conditionals answered from the store (RFC 9110 §13).

use super::check;
use crate::check::{fail, may, must, optional, pass, Check, Ctx, Outcome};
use crate::origin::Reply;
use crate::wire::date;

pub const CHECKS: &[Check] = &[
    check!(
        "revalidate-etag",
        "RFC 9111 §4.3.1",
        "a stale response with an ETag is validated with If-None-Match",
        revalidate_etag
    ),
    check!(
        "revalidate-last-modified",
        "RFC 9111 §4.3.1",
        "a stale response with Last-Modified is validated with If-Modified-Since",
        revalidate_lm
    ),
    check!(
        "304-serves-stored-body",
        "RFC 9111 §4.3.3",
        "a 304 from the origin gets the client the stored body with 200",
        serves_stored
    ),
    check!(
        "304-updates-headers",
        "RFC 9111 §4.3.4",
        "header fields of a 304 replace the stored ones",
        updates_headers
    ),
    check!(
        "304-freshens",
        "RFC 9111 §4.3.4",
        "a 304 with max-age=60 makes the stored response fresh again",
        freshens
    ),
    check!(
        "revalidate-200-replaces",
        "RFC 9111 §4.3.3",
        "a 200 to a validation replaces the stored response",
        replaced
    ),
    check!(
        "client-inm-304",
        "RFC 9111 §4.3.2",
        "If-None-Match matching the stored ETag gets 304 from the store",
        client_inm
    ),
    check!(
        "client-ims-304",
        "RFC 9111 §4.3.2",
        "If-Modified-Since at Last-Modified gets 304 from the store",
        client_ims
    ),
    check!(
        "client-inm-other-200",
        "RFC 9110 §13.1.2",
        "If-None-Match with another tag gets the full 200",
        client_inm_other
    ),
    check!(
        "client-inm-weak",
        "RFC 9110 §13.1.2",
        "If-None-Match uses weak comparison: \"a\" matches W/\"a\"",
        client_inm_weak
    ),
    check!(
        "client-inm-over-ims",
        "RFC 9110 §13.1.3",
        "If-None-Match is evaluated instead of If-Modified-Since",
        client_inm_over_ims
    ),
    check!(
        "head-from-store",
        "RFC 9110 §9.3.2",
        "a HEAD is answered from a stored GET response",
        head_from_store
    ),
];

/// Stale after 1 s; validated with a 304 carrying `extra`.
fn validated(c: &Ctx, etag: bool, extra: &'static [(&'static str, &'static str)]) -> String {
    let lm = date(-86400);
    c.serve("x", move |s| {
        let mut hs: Vec<(&str, &str)> = vec![("Cache-Control", "max-age=1"), ("X-Version", "1")];
        match etag {
            true => hs.push(("ETag", "\"e1\"")),
            false => hs.push(("Last-Modified", &lm)),
        }
        let conditional =
            s.header("if-none-match").is_some() || s.header("if-modified-since").is_some();
        match (s.n, conditional) {
            (1, _) => Reply::ok(&hs, "v1"),
            (_, true) => Reply::new(304, extra, ""),
            (_, false) => Reply::ok(&hs, &super::version(s)),
        }
    })
}

fn revalidate_etag(c: &Ctx) -> Outcome {
    let p = validated(
        c,
        true,
        &[("Cache-Control", "max-age=1"), ("ETag", "\"e1\"")],
    );
    c.get(&p, &[]);
    c.wait(2.2);
    c.get(&p, &[]);
    let inm = c
        .seen(&p)
        .get(1)
        .and_then(|s| s.header("if-none-match").map(str::to_string));
    must(
        inm.as_deref() == Some("\"e1\""),
        format!("If-None-Match sent: {inm:?}"),
    )
}

fn revalidate_lm(c: &Ctx) -> Outcome {
    let p = validated(c, false, &[("Cache-Control", "max-age=1")]);
    let first = c.get(&p, &[]);
    c.wait(2.2);
    c.get(&p, &[]);
    let ims = c
        .seen(&p)
        .get(1)
        .and_then(|s| s.header("if-modified-since").map(str::to_string));
    let lm = first.header("last-modified").map(str::to_string);
    must(
        ims.is_some() && ims == lm,
        format!("If-Modified-Since sent: {ims:?}, Last-Modified {lm:?}"),
    )
}

fn serves_stored(c: &Ctx) -> Outcome {
    let p = validated(
        c,
        true,
        &[("Cache-Control", "max-age=1"), ("ETag", "\"e1\"")],
    );
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    if c.count(&p) != 2 {
        return fail(format!("origin saw {} requests, 2 expected", c.count(&p)));
    }
    must(
        r.status == 200 && r.text() == "v1",
        format!("client got {} {:?}", r.status, r.text()),
    )
}

fn updates_headers(c: &Ctx) -> Outcome {
    let p = validated(
        c,
        true,
        &[
            ("Cache-Control", "max-age=60"),
            ("ETag", "\"e1\""),
            ("X-Version", "2"),
        ],
    );
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    let hit = c.get(&p, &[]);
    let ok = r.header("x-version") == Some("2")
        && (c.count(&p) > 2 || hit.header("x-version") == Some("2"));
    must(
        ok,
        format!(
            "X-Version after the 304: {:?}, then {:?}",
            r.header("x-version"),
            hit.header("x-version")
        ),
    )
}

fn freshens(c: &Ctx) -> Outcome {
    let p = validated(
        c,
        true,
        &[("Cache-Control", "max-age=60"), ("ETag", "\"e1\"")],
    );
    c.get(&p, &[]);
    c.wait(2.2);
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    must(
        c.count(&p) == 2 && r.text() == "v1",
        format!("origin saw {} requests (2 expected)", c.count(&p)),
    )
}

fn replaced(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let body = super::version(s);
        let cc = if s.n == 1 { "max-age=1" } else { "max-age=60" };
        Reply::ok(
            &[("Cache-Control", cc), ("ETag", &format!("\"{body}\""))],
            &body,
        )
    });
    c.get(&p, &[]);
    c.wait(2.2);
    let fresh = c.get(&p, &[]);
    let hit = c.get(&p, &[]);
    let ok = fresh.text() == "v2" && hit.text() == "v2" && c.count(&p) == 2;
    must(
        ok,
        format!(
            "after revalidation {:?}, then {:?}",
            fresh.text(),
            hit.text()
        ),
    )
}

/// A fresh stored response with an ETag and a Last-Modified, then a
/// request with `headers`.
fn conditional(
    c: &Ctx,
    etag: &'static str,
    headers: &[(&str, &str)],
) -> (crate::client::Resp, usize, String) {
    let lm = date(-86400);
    let lm2 = lm.clone();
    let p = c.serve("x", move |s| {
        Reply::ok(
            &[
                ("Cache-Control", "max-age=60"),
                ("ETag", etag),
                ("Last-Modified", &lm),
            ],
            &super::version(s),
        )
    });
    c.get(&p, &[]);
    let hs: Vec<(&str, &str)> = headers
        .iter()
        .map(|&(n, v)| (n, if v == "LM" { lm2.as_str() } else { v }))
        .collect();
    let r = c.get(&p, &hs);
    (r, c.count(&p), lm2)
}

/// 304 from the store passes; 304 by asking the origin is optional.
fn judged_304(r: &crate::client::Resp, n: usize) -> Outcome {
    match (r.status, n) {
        (304, 1) => pass("304 from the store"),
        (304, _) => optional("304, but the origin was asked"),
        (200, 1) => optional("the full 200 from the store (the condition was not evaluated)"),
        (s, _) => fail(format!("status {s}")),
    }
}

fn client_inm(c: &Ctx) -> Outcome {
    let (r, n, _) = conditional(c, "\"a\"", &[("If-None-Match", "\"a\"")]);
    judged_304(&r, n)
}

fn client_ims(c: &Ctx) -> Outcome {
    let (r, n, _) = conditional(c, "\"a\"", &[("If-Modified-Since", "LM")]);
    judged_304(&r, n)
}

fn client_inm_other(c: &Ctx) -> Outcome {
    let (r, _, _) = conditional(c, "\"a\"", &[("If-None-Match", "\"b\"")]);
    must(
        r.status == 200 && r.text().starts_with('v'),
        format!("status {}", r.status),
    )
}

fn client_inm_weak(c: &Ctx) -> Outcome {
    let (r, n, _) = conditional(c, "W/\"a\"", &[("If-None-Match", "\"a\"")]);
    match r.status {
        200 if n == 1 => fail("200 from the store: weak comparison would match"),
        _ => judged_304(&r, n),
    }
}

fn client_inm_over_ims(c: &Ctx) -> Outcome {
    // The tag does not match, the date would: the answer must be 200.
    let (r, _, _) = conditional(
        c,
        "\"a\"",
        &[("If-None-Match", "\"b\""), ("If-Modified-Since", "LM")],
    );
    must(r.status == 200, format!("status {}", r.status))
}

fn head_from_store(c: &Ctx) -> Outcome {
    let p = super::versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[]);
    let r = c.send("HEAD", &p, &[], b"");
    if r.status != 200 {
        return fail(format!("status {}", r.status));
    }
    may(c.count(&p) == 1, super::said(c.count(&p) == 1))
}
