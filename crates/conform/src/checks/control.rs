//! Cache-Control directives that forbid storing or reusing (RFC 9111
//! §3, §3.5, §5.2): `no-store`, `private`, `Authorization`, `no-cache`,
//! the request directives, `must-revalidate` and its kin.

use super::{check, reused, said, versioned};
use crate::check::{fail, may, must, pass, Check, Ctx, Outcome};
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!(
        "no-store-response",
        "RFC 9111 §5.2.2.5",
        "a response with no-store is not stored",
        no_store_response
    ),
    check!(
        "no-store-request",
        "RFC 9111 §5.2.1.5",
        "a response to a request with no-store is not stored",
        no_store_request
    ),
    check!(
        "private-response",
        "RFC 9111 §5.2.2.7",
        "a shared cache does not store a private response",
        private_response
    ),
    check!(
        "private-qualified",
        "RFC 9111 §5.2.2.7",
        "private=\"X-Secret\": the field is never served from the store",
        private_qualified
    ),
    check!(
        "authorization-not-shared",
        "RFC 9111 §3.5",
        "a response to a request with Authorization is not reused",
        authorization
    ),
    check!(
        "authorization-public",
        "RFC 9111 §3.5",
        "with Authorization, public lets a shared cache reuse the response",
        authorization_public
    ),
    check!(
        "no-cache-response",
        "RFC 9111 §5.2.2.4",
        "a response with no-cache is not reused without validation",
        no_cache_response
    ),
    check!(
        "no-cache-response-validates",
        "RFC 9111 §5.2.2.4",
        "a stored no-cache response is validated with its ETag",
        no_cache_validates
    ),
    check!(
        "no-cache-request",
        "RFC 9111 §5.2.1.4",
        "a request with no-cache is not answered from the store unvalidated",
        no_cache_request
    ),
    check!(
        "pragma-no-cache-request",
        "RFC 9111 §5.4",
        "a request with only Pragma: no-cache goes to the origin",
        pragma_request
    ),
    check!(
        "max-age-0-request",
        "RFC 9111 §5.2.1.1",
        "a request with max-age=0 is not answered from the store unvalidated",
        max_age_0_request
    ),
    check!(
        "min-fresh-request",
        "RFC 9111 §5.2.1.3",
        "min-fresh=120 is not met by a response fresh for 60 s",
        min_fresh_request
    ),
    check!(
        "max-stale-request",
        "RFC 9111 §5.2.1.2",
        "max-stale=60 lets a stale response be reused",
        max_stale_request
    ),
    check!(
        "only-if-cached-miss",
        "RFC 9111 §5.2.1.7",
        "only-if-cached without a stored response gets 504, origin untouched",
        only_if_cached_miss
    ),
    check!(
        "only-if-cached-hit",
        "RFC 9111 §5.2.1.7",
        "only-if-cached with a fresh stored response gets it",
        only_if_cached_hit
    ),
    check!(
        "must-revalidate-stale",
        "RFC 9111 §5.2.2.2",
        "must-revalidate: a stale response is validated",
        must_revalidate_stale
    ),
    check!(
        "must-revalidate-max-stale",
        "RFC 9111 §5.2.2.2",
        "must-revalidate overrides the client's max-stale",
        must_revalidate_max_stale
    ),
    check!(
        "proxy-revalidate-max-stale",
        "RFC 9111 §5.2.2.8",
        "proxy-revalidate overrides max-stale in a shared cache",
        proxy_revalidate_max_stale
    ),
    check!(
        "s-maxage-max-stale",
        "RFC 9111 §5.2.2.10",
        "s-maxage implies proxy-revalidate: max-stale is not honoured",
        s_maxage_max_stale
    ),
    check!(
        "must-revalidate-origin-down",
        "RFC 9111 §5.2.2.2",
        "must-revalidate with the origin down: an error (504), never the stale body",
        must_revalidate_down
    ),
    check!(
        "must-understand",
        "RFC 9111 §5.2.2.3",
        "must-understand, no-store on a 200 lets a cache that understands 200 store it",
        must_understand
    ),
];

fn no_store_response(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "no-store, max-age=60")]);
    must(!r, said(r))
}

fn no_store_request(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[("Cache-Control", "no-store")]);
    let r = c.get(&p, &[]);
    let reused = c.count(&p) == 1 && r.text() == "v1";
    must(!reused, said(reused))
}

fn private_response(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "private, max-age=60")]);
    must(!r, said(r))
}

fn private_qualified(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let secret = format!("secret-{}", s.n);
        Reply::ok(
            &[
                ("Cache-Control", "private=\"X-Secret\", max-age=60"),
                ("X-Secret", &secret),
            ],
            &super::version(s),
        )
    });
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    match (c.count(&p), r.header("x-secret")) {
        (1, Some(v)) => fail(format!("stored response served X-Secret: {v}")),
        (1, None) => pass("reused without the private field"),
        _ => may(false, "not reused (allowed: storing it is a MAY)"),
    }
}

fn authorization(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[("Authorization", "Basic dXNlcjpwYXNz")]);
    let r = c.get(&p, &[("Authorization", "Basic b3RoZXI6cGFzcw==")]);
    let reused = c.count(&p) == 1 && r.text() == "v1";
    must(!reused, said(reused))
}

fn authorization_public(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "public, max-age=60")]);
    c.get(&p, &[("Authorization", "Basic dXNlcjpwYXNz")]);
    let r = c.get(&p, &[("Authorization", "Basic dXNlcjpwYXNz")]);
    let reused = c.count(&p) == 1 && r.text() == "v1";
    may(reused, said(reused))
}

fn no_cache_response(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[
            ("Cache-Control", "no-cache, max-age=60"),
            ("ETag", "\"nc\""),
        ],
    );
    must(!r, said(r))
}

fn no_cache_validates(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| match s.header("if-none-match") {
        Some(_) => Reply::new(
            304,
            &[
                ("Cache-Control", "no-cache, max-age=60"),
                ("ETag", "\"nc\""),
            ],
            "",
        ),
        None => Reply::ok(
            &[
                ("Cache-Control", "no-cache, max-age=60"),
                ("ETag", "\"nc\""),
            ],
            &super::version(s),
        ),
    });
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    let seen = c.seen(&p);
    let inm = seen
        .get(1)
        .and_then(|s| s.header("if-none-match").map(str::to_string));
    if seen.len() != 2 {
        return fail(format!("origin saw {} requests, 2 expected", seen.len()));
    }
    let ok = inm.as_deref() == Some("\"nc\"") && r.status == 200 && r.text() == "v1";
    may(
        ok,
        format!(
            "second request to the origin had If-None-Match {inm:?}; client got {} {:?}",
            r.status,
            r.text()
        ),
    )
}

/// A stored response (max-age=60), then a request with `headers`;
/// whether it reached the origin.
fn forwarded_with(c: &Ctx, headers: &[(&str, &str)]) -> bool {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[]);
    let r = c.get(&p, headers);
    c.count(&p) == 2 && r.text() == "v2"
}

fn no_cache_request(c: &Ctx) -> Outcome {
    let f = forwarded_with(c, &[("Cache-Control", "no-cache")]);
    must(f, said(!f))
}

fn pragma_request(c: &Ctx) -> Outcome {
    let f = forwarded_with(c, &[("Pragma", "no-cache")]);
    may(f, said(!f))
}

fn max_age_0_request(c: &Ctx) -> Outcome {
    let f = forwarded_with(c, &[("Cache-Control", "max-age=0")]);
    must(f, said(!f))
}

fn min_fresh_request(c: &Ctx) -> Outcome {
    let f = forwarded_with(c, &[("Cache-Control", "min-fresh=120")]);
    must(f, said(!f))
}

/// A response with `cc`, left to go stale, then asked for with
/// max-stale=60; whether the stale copy was served.
fn stale_served_on_max_stale(c: &Ctx, cc: &'static str) -> bool {
    let p = c.serve("x", move |s| {
        Reply::ok(&[("Cache-Control", cc)], &super::version(s))
    });
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[("Cache-Control", "max-stale=60")]);
    c.count(&p) == 1 && r.text() == "v1"
}

fn max_stale_request(c: &Ctx) -> Outcome {
    let s = stale_served_on_max_stale(c, "max-age=1");
    may(s, said(s))
}

fn must_revalidate_stale(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=1, must-revalidate")]);
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    let f = c.count(&p) == 2 && r.text() == "v2";
    must(f, said(!f))
}

fn must_revalidate_max_stale(c: &Ctx) -> Outcome {
    let s = stale_served_on_max_stale(c, "max-age=1, must-revalidate");
    must(!s, said(s))
}

fn proxy_revalidate_max_stale(c: &Ctx) -> Outcome {
    let s = stale_served_on_max_stale(c, "max-age=1, proxy-revalidate");
    must(!s, said(s))
}

fn s_maxage_max_stale(c: &Ctx) -> Outcome {
    let s = stale_served_on_max_stale(c, "s-maxage=1");
    must(!s, said(s))
}

fn must_revalidate_down(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| match s.n {
        1 => Reply::ok(&[("Cache-Control", "max-age=1, must-revalidate")], "v1"),
        _ => Reply::Close,
    });
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    match (r.status, r.text().as_str()) {
        (_, "v1") => fail("the stale body was served"),
        (504, _) => pass("504"),
        (s, _) if s >= 500 => pass(format!("{s} (504 is the SHOULD)")),
        (s, _) => fail(format!("status {s}")),
    }
}

fn must_understand(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[("Cache-Control", "must-understand, no-store, max-age=60")],
    );
    may(r, said(r))
}

fn only_if_cached_miss(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    let r = c.get(&p, &[("Cache-Control", "only-if-cached")]);
    must(
        r.status == 504 && c.count(&p) == 0,
        format!("status {}, origin saw {}", r.status, c.count(&p)),
    )
}

fn only_if_cached_hit(c: &Ctx) -> Outcome {
    let p = versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[]);
    let r = c.get(&p, &[("Cache-Control", "only-if-cached")]);
    may(
        r.status == 200 && r.text() == "v1" && c.count(&p) == 1,
        format!("status {} {:?}", r.status, r.text()),
    )
}
