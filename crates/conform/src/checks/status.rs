//! Status codes (RFC 9110 §15.1, RFC 9111 §3, §4.2.2): the heuristically
//! cacheable ones may be stored without explicit freshness, the others
//! need it.

use super::check;
use crate::check::{may, must, Check, Ctx, Outcome};
use crate::origin::Reply;
use crate::wire::date;

pub const CHECKS: &[Check] = &[
    check!(
        "status-203-default",
        "RFC 9110 §15.4.4",
        "203 with Last-Modified only is reused (heuristically cacheable)",
        s203
    ),
    check!(
        "status-204-default",
        "RFC 9110 §15.3.5",
        "204 with Last-Modified only is reused (heuristically cacheable)",
        s204
    ),
    check!(
        "status-300-default",
        "RFC 9110 §15.4.1",
        "300 with Last-Modified only is reused (heuristically cacheable)",
        s300
    ),
    check!(
        "status-301-default",
        "RFC 9110 §15.4.2",
        "301 with Last-Modified only is reused (heuristically cacheable)",
        s301
    ),
    check!(
        "status-308-default",
        "RFC 9110 §15.4.9",
        "308 with Last-Modified only is reused (heuristically cacheable)",
        s308
    ),
    check!(
        "status-404-default",
        "RFC 9110 §15.5.5",
        "404 with Last-Modified only is reused (heuristically cacheable)",
        s404
    ),
    check!(
        "status-405-default",
        "RFC 9110 §15.5.6",
        "405 with Last-Modified only is reused (heuristically cacheable)",
        s405
    ),
    check!(
        "status-410-default",
        "RFC 9110 §15.5.11",
        "410 with Last-Modified only is reused (heuristically cacheable)",
        s410
    ),
    check!(
        "status-414-default",
        "RFC 9110 §15.5.15",
        "414 with Last-Modified only is reused (heuristically cacheable)",
        s414
    ),
    check!(
        "status-501-default",
        "RFC 9110 §15.6.2",
        "501 with Last-Modified only is reused (heuristically cacheable)",
        s501
    ),
    check!(
        "status-404-max-age",
        "RFC 9111 §3",
        "404 with max-age=60 is reused",
        s404_max_age
    ),
    check!(
        "status-302-max-age",
        "RFC 9111 §3",
        "302 with max-age=60 is reused",
        s302_max_age
    ),
    check!(
        "status-307-not-default",
        "RFC 9111 §4.2.2",
        "307 with Last-Modified only is not reused",
        s307
    ),
    check!(
        "status-403-not-default",
        "RFC 9111 §4.2.2",
        "403 with Last-Modified only is not reused",
        s403
    ),
    check!(
        "status-500-not-default",
        "RFC 9111 §4.2.2",
        "500 with Last-Modified only is not reused",
        s500
    ),
    check!(
        "status-503-not-default",
        "RFC 9111 §4.2.2",
        "503 with Last-Modified only is not reused",
        s503
    ),
];

/// Two GETs answered with `status` and the headers `extra` (plus an old
/// Last-Modified); whether the second came from the store.
fn reused_status(c: &Ctx, status: u16, max_age: bool) -> bool {
    let p = c.serve("x", move |s| {
        let lm = date(-10 * 86400);
        let mut hs = vec![("Last-Modified", lm.as_str()), ("Location", "/elsewhere")];
        if max_age {
            hs.push(("Cache-Control", "max-age=60"));
        }
        let body = if status == 204 {
            String::new()
        } else {
            super::version(s)
        };
        Reply::new(status, &hs, &body)
    });
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    let n = c.count(&p);
    let body_ok = status == 204 || r.text() == "v1";
    n == 1 && r.status == status && body_ok
}

fn by_default(c: &Ctx, status: u16) -> Outcome {
    let r = reused_status(c, status, false);
    may(r, super::said(r))
}

fn not_by_default(c: &Ctx, status: u16) -> Outcome {
    let r = reused_status(c, status, false);
    must(!r, super::said(r))
}

fn s203(c: &Ctx) -> Outcome {
    by_default(c, 203)
}
fn s204(c: &Ctx) -> Outcome {
    by_default(c, 204)
}
fn s300(c: &Ctx) -> Outcome {
    by_default(c, 300)
}
fn s301(c: &Ctx) -> Outcome {
    by_default(c, 301)
}
fn s308(c: &Ctx) -> Outcome {
    by_default(c, 308)
}
fn s404(c: &Ctx) -> Outcome {
    by_default(c, 404)
}
fn s405(c: &Ctx) -> Outcome {
    by_default(c, 405)
}
fn s410(c: &Ctx) -> Outcome {
    by_default(c, 410)
}
fn s414(c: &Ctx) -> Outcome {
    by_default(c, 414)
}
fn s501(c: &Ctx) -> Outcome {
    by_default(c, 501)
}

fn s404_max_age(c: &Ctx) -> Outcome {
    let r = reused_status(c, 404, true);
    may(r, super::said(r))
}

fn s302_max_age(c: &Ctx) -> Outcome {
    let r = reused_status(c, 302, true);
    may(r, super::said(r))
}

fn s307(c: &Ctx) -> Outcome {
    not_by_default(c, 307)
}
fn s403(c: &Ctx) -> Outcome {
    not_by_default(c, 403)
}
fn s500(c: &Ctx) -> Outcome {
    not_by_default(c, 500)
}
fn s503(c: &Ctx) -> Outcome {
    not_by_default(c, 503)
}
