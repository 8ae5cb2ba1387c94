//! Invalidation by unsafe methods (RFC 9111 §4.4), and responses to
//! unsafe methods never reused (RFC 9110 §9.2.1, §9.3.3).

use super::{check, said, versioned};
use crate::check::{fail, may, must, Check, Ctx, Outcome};
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!(
        "post-invalidates",
        "RFC 9111 §4.4",
        "a successful POST invalidates the stored response of its URI",
        post
    ),
    check!(
        "put-invalidates",
        "RFC 9111 §4.4",
        "a successful PUT invalidates the stored response of its URI",
        put
    ),
    check!(
        "delete-invalidates",
        "RFC 9111 §4.4",
        "a successful DELETE invalidates the stored response of its URI",
        delete
    ),
    check!(
        "patch-invalidates",
        "RFC 9111 §4.4",
        "a successful PATCH invalidates the stored response of its URI",
        patch
    ),
    check!(
        "unknown-method-invalidates",
        "RFC 9111 §4.4",
        "a method of unknown safety invalidates too",
        unknown
    ),
    check!(
        "invalidates-location",
        "RFC 9111 §4.4",
        "a POST's Location (same origin) is invalidated",
        location
    ),
    check!(
        "invalidates-content-location",
        "RFC 9111 §4.4",
        "a POST's Content-Location (same origin) is invalidated",
        content_location
    ),
    check!(
        "post-response-not-reused",
        "RFC 9110 §9.3.3",
        "a POST is never answered from the store",
        post_not_reused
    ),
    check!(
        "unsafe-forwarded",
        "RFC 9110 §9.2.1",
        "a DELETE is forwarded to the origin even with a stored response",
        delete_forwarded
    ),
];

/// Stores `/x`, sends `method` to it, GETs it again; whether the last
/// GET reached the origin.
fn invalidated_by(c: &Ctx, method: &str) -> (bool, usize) {
    let p = c.serve("x", |s| match s.method.as_str() {
        "GET" => Reply::ok(&[("Cache-Control", "max-age=60")], &super::version(s)),
        _ => Reply::new(200, &[("Cache-Control", "no-store")], "done"),
    });
    c.get(&p, &[]);
    c.send(method, &p, &[], b"data");
    let r = c.get(&p, &[]);
    let seen = c.seen(&p);
    let gets = seen.iter().filter(|s| s.method == "GET").count();
    let unsafe_seen = seen.iter().filter(|s| s.method == method).count();
    (gets == 2 && r.text() != "v1", unsafe_seen)
}

fn judged(c: &Ctx, method: &str) -> Outcome {
    let (inv, seen) = invalidated_by(c, method);
    if seen == 0 {
        return fail(format!("the {method} never reached the origin"));
    }
    must(inv, format!("after the {method}: {}", said(!inv)))
}

fn post(c: &Ctx) -> Outcome {
    judged(c, "POST")
}

fn put(c: &Ctx) -> Outcome {
    judged(c, "PUT")
}

fn delete(c: &Ctx) -> Outcome {
    judged(c, "DELETE")
}

fn patch(c: &Ctx) -> Outcome {
    judged(c, "PATCH")
}

fn unknown(c: &Ctx) -> Outcome {
    judged(c, "FROBNICATE")
}

/// Stores `/other`, POSTs to `/x` whose reply names `/other` in
/// `field`; whether `/other` was invalidated.
fn other_invalidated(c: &Ctx, field: &'static str) -> Outcome {
    let other = versioned(c, "other", &[("Cache-Control", "max-age=60")]);
    let o = other.clone();
    let p = c.serve("x", move |_| {
        Reply::new(
            201,
            &[(field, o.as_str()), ("Cache-Control", "no-store")],
            "made",
        )
    });
    c.get(&other, &[]);
    c.send("POST", &p, &[], b"data");
    let r = c.get(&other, &[]);
    let inv = c.count(&other) == 2 && r.text() == "v2";
    may(inv, format!("{field} {other}: {}", said(!inv)))
}

fn location(c: &Ctx) -> Outcome {
    other_invalidated(c, "Location")
}

fn content_location(c: &Ctx) -> Outcome {
    other_invalidated(c, "Content-Location")
}

fn post_not_reused(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.send("POST", &p, &[], b"one");
    let r = c.send("POST", &p, &[], b"two");
    let reused = c.count(&p) == 1 || r.text() == "v1";
    must(!reused, said(reused))
}

fn delete_forwarded(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| match s.method.as_str() {
        "GET" => Reply::ok(&[("Cache-Control", "max-age=60")], &super::version(s)),
        _ => Reply::new(204, &[], ""),
    });
    c.get(&p, &[]);
    let r = c.send("DELETE", &p, &[], b"");
    let n = c.seen(&p).iter().filter(|s| s.method == "DELETE").count();
    must(
        n == 1 && r.status == 204,
        format!("origin saw {n} DELETE; client got {}", r.status),
    )
}
