//! `CDN-Cache-Control` (RFC 9213): obeyed over `Cache-Control` by a
//! surrogate (a CDN's cache), not by a forward proxy, which it does not
//! target. Implementing RFC 9213 is a choice: a surrogate that ignores
//! the field gets `optional`, except where ignoring it is right anyway.

use super::{check, reused, said};
use crate::check::{may, must, Check, Ctx, Outcome};

pub const CHECKS: &[Check] = &[
    check!(
        "cdn-cc-over-cc",
        "RFC 9213 §2",
        "CDN-Cache-Control: max-age=60 wins over Cache-Control: no-store",
        over_cc,
        Reverse
    ),
    check!(
        "cdn-cc-no-store",
        "RFC 9213 §2",
        "CDN-Cache-Control: no-store wins over Cache-Control: max-age=60",
        no_store,
        Reverse
    ),
    check!(
        "cdn-cc-invalid-ignored",
        "RFC 9213 §2.1",
        "an invalid CDN-Cache-Control is ignored: Cache-Control governs",
        invalid,
        Reverse
    ),
    check!(
        "cdn-cc-stale",
        "RFC 9213 §2",
        "CDN-Cache-Control: max-age=1 wins over Cache-Control: max-age=60",
        stale,
        Reverse
    ),
    check!(
        "cdn-cc-not-forwarded",
        "RFC 9213 §2",
        "a surrogate that obeys CDN-Cache-Control does not pass it on",
        not_forwarded,
        Reverse
    ),
    check!(
        "cdn-cc-ignored-by-forward",
        "RFC 9213 §2",
        "a forward proxy (not a CDN) follows Cache-Control, not CDN-Cache-Control",
        forward_ignores,
        Forward
    ),
    check!(
        "cdn-cc-forward-passes",
        "RFC 9213 §2",
        "a forward proxy passes CDN-Cache-Control on to the client",
        forward_passes,
        Forward
    ),
];

fn over_cc(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[
            ("Cache-Control", "no-store"),
            ("CDN-Cache-Control", "max-age=60"),
        ],
    );
    may(r, said(r))
}

fn no_store(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "no-store"),
        ],
    );
    may(!r, said(r))
}

fn invalid(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[
            ("Cache-Control", "no-store"),
            ("CDN-Cache-Control", "max-age=60, ]bad["),
        ],
    );
    must(!r, said(r))
}

fn stale(c: &Ctx) -> Outcome {
    let p = super::versioned(
        c,
        "x",
        &[
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "max-age=1"),
        ],
    );
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    let f = c.count(&p) == 2 && r.text() == "v2";
    may(f, said(!f))
}

fn not_forwarded(c: &Ctx) -> Outcome {
    let p = super::versioned(
        c,
        "x",
        &[
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "max-age=30"),
        ],
    );
    let r = c.get(&p, &[]);
    let hit = c.get(&p, &[]);
    let gone = r.header("cdn-cache-control").is_none() && hit.header("cdn-cache-control").is_none();
    may(
        gone,
        format!(
            "CDN-Cache-Control downstream: {:?}",
            r.header("cdn-cache-control")
        ),
    )
}

fn forward_ignores(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "no-store"),
        ],
    );
    may(r, said(r))
}

fn forward_passes(c: &Ctx) -> Outcome {
    let p = super::versioned(
        c,
        "x",
        &[
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "max-age=30"),
        ],
    );
    let r = c.get(&p, &[]);
    may(
        r.header("cdn-cache-control") == Some("max-age=30"),
        format!(
            "CDN-Cache-Control downstream: {:?}",
            r.header("cdn-cache-control")
        ),
    )
}
