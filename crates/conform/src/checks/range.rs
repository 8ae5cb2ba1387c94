//! Ranges of stored responses (RFC 9110 §14, RFC 9111 §3.3–§3.4).

use super::check;
use crate::check::{fail, may, must, optional, pass, Check, Ctx, Outcome};
use crate::client::Resp;
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!(
        "range-from-store",
        "RFC 9110 §14.2",
        "bytes=2-5 of a stored response: 206 with those bytes",
        range_from_store
    ),
    check!(
        "range-suffix",
        "RFC 9110 §14.1.1",
        "bytes=-3 of a stored response: its last 3 bytes",
        range_suffix
    ),
    check!(
        "range-open-ended",
        "RFC 9110 §14.1.1",
        "bytes=7- of a stored response: from byte 7 to the end",
        range_open
    ),
    check!(
        "range-unsatisfiable",
        "RFC 9110 §15.5.17",
        "bytes=20-30 of a 10-byte response: 416 with Content-Range bytes */10",
        range_416
    ),
    check!(
        "range-partial-not-whole",
        "RFC 9111 §3.3",
        "a 206 is never served as the whole response",
        partial_not_whole
    ),
    check!(
        "if-range-match",
        "RFC 9110 §13.1.5",
        "If-Range with the stored ETag: the range",
        if_range_match
    ),
    check!(
        "if-range-other",
        "RFC 9110 §13.1.5",
        "If-Range with another ETag: the whole response",
        if_range_other
    ),
];

const DIGITS: &str = "0123456789";

fn stored(c: &Ctx) -> String {
    let p = c.serve("x", |s| match s.header("range") {
        // An origin that honours ranges, so a forwarded one is right too.
        Some(r) if r == "bytes=2-5" && s.header("if-range").is_none() => Reply::new(
            206,
            &[
                ("Cache-Control", "max-age=60"),
                ("ETag", "\"d\""),
                ("Content-Range", "bytes 2-5/10"),
            ],
            "2345",
        ),
        _ => Reply::ok(
            &[("Cache-Control", "max-age=60"), ("ETag", "\"d\"")],
            DIGITS,
        ),
    });
    c.get(&p, &[]);
    p
}

/// A 206 with `want` passes, from the store; from the origin or the whole
/// 200 is optional; anything else fails.
fn judged(r: &Resp, n: usize, want: &str, cr: &str) -> Outcome {
    match r.status {
        206 if r.text() == want && r.header("content-range") == Some(cr) => may(
            n == 1,
            if n == 1 {
                "206 from the store"
            } else {
                "206, but from the origin"
            },
        ),
        200 if r.text() == DIGITS => optional("the whole 200 (ignoring Range is allowed)"),
        s => fail(format!(
            "{s} {:?} Content-Range {:?}",
            r.text(),
            r.header("content-range")
        )),
    }
}

fn ranged(c: &Ctx, range: &str, want: &str, cr: &str) -> Outcome {
    let p = stored(c);
    let r = c.get(&p, &[("Range", range)]);
    judged(&r, c.count(&p), want, cr)
}

fn range_from_store(c: &Ctx) -> Outcome {
    ranged(c, "bytes=2-5", "2345", "bytes 2-5/10")
}

fn range_suffix(c: &Ctx) -> Outcome {
    ranged(c, "bytes=-3", "789", "bytes 7-9/10")
}

fn range_open(c: &Ctx) -> Outcome {
    ranged(c, "bytes=7-", "789", "bytes 7-9/10")
}

fn range_416(c: &Ctx) -> Outcome {
    let p = stored(c);
    let r = c.get(&p, &[("Range", "bytes=20-30")]);
    match r.status {
        416 => must(
            r.header("content-range") == Some("bytes */10"),
            format!("Content-Range {:?}", r.header("content-range")),
        ),
        200 if r.text() == DIGITS => optional("the whole 200 (ignoring Range is allowed)"),
        s => fail(format!("status {s}")),
    }
}

fn partial_not_whole(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| match s.header("range") {
        Some(_) => Reply::new(
            206,
            &[
                ("Cache-Control", "max-age=60"),
                ("Content-Range", "bytes 2-5/10"),
            ],
            "2345",
        ),
        None => Reply::ok(&[("Cache-Control", "max-age=60")], DIGITS),
    });
    c.get(&p, &[("Range", "bytes=2-5")]);
    let r = c.get(&p, &[]);
    must(
        r.status == 200 && r.text() == DIGITS,
        format!("whole request got {} {:?}", r.status, r.text()),
    )
}

fn if_range_match(c: &Ctx) -> Outcome {
    let p = stored(c);
    let r = c.get(&p, &[("Range", "bytes=2-5"), ("If-Range", "\"d\"")]);
    judged(&r, c.count(&p), "2345", "bytes 2-5/10")
}

fn if_range_other(c: &Ctx) -> Outcome {
    let p = stored(c);
    let r = c.get(&p, &[("Range", "bytes=2-5"), ("If-Range", "\"other\"")]);
    match r.status {
        200 if r.text() == DIGITS => pass("the whole 200"),
        s => fail(format!("{s} {:?}", r.text())),
    }
}
