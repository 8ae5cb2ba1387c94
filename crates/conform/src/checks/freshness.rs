//! Freshness (RFC 9111 §4.2, §5.1–§5.3): explicit lifetimes, heuristics,
//! and `Age` arithmetic.

use super::{check, reused, said, twice, version};
use crate::check::{may, must, Check, Ctx, Outcome};
use crate::origin::Reply;
use crate::wire::date;

pub const CHECKS: &[Check] = &[
    check!(
        "fresh-max-age",
        "RFC 9111 §5.2.2.1",
        "a response fresh by max-age is reused",
        fresh_max_age
    ),
    check!(
        "stale-max-age",
        "RFC 9111 §4.2",
        "a response whose max-age ran out is not reused without validation",
        stale_max_age
    ),
    check!(
        "fresh-s-maxage",
        "RFC 9111 §5.2.2.10",
        "a response fresh by s-maxage is reused by a shared cache",
        fresh_s_maxage
    ),
    check!(
        "s-maxage-over-max-age",
        "RFC 9111 §5.2.2.10",
        "s-maxage=60 wins over max-age=0 in a shared cache",
        s_maxage_wins
    ),
    check!(
        "s-maxage-expires-first",
        "RFC 9111 §5.2.2.10",
        "s-maxage=1 wins over max-age=60: stale after 1 s",
        s_maxage_stale
    ),
    check!(
        "fresh-expires",
        "RFC 9111 §5.3",
        "a response fresh by Expires is reused",
        fresh_expires
    ),
    check!(
        "expires-past",
        "RFC 9111 §5.3",
        "an Expires in the past makes the response stale",
        expires_past
    ),
    check!(
        "expires-invalid",
        "RFC 9111 §5.3",
        "an invalid Expires (\"0\") means already expired",
        expires_invalid
    ),
    check!(
        "max-age-over-expires",
        "RFC 9111 §5.3",
        "max-age=60 wins over an Expires in the past",
        max_age_over_expires
    ),
    check!(
        "max-age-over-future-expires",
        "RFC 9111 §5.3",
        "max-age=1 wins over an Expires an hour ahead",
        max_age_over_future_expires
    ),
    check!(
        "heuristic-last-modified",
        "RFC 9111 §4.2.2",
        "a 200 with only Last-Modified is reused by heuristic freshness",
        heuristic
    ),
    check!(
        "heuristic-302-not-reused",
        "RFC 9111 §4.2.2",
        "a 302 (not heuristically cacheable) with Last-Modified is not reused",
        heuristic_302
    ),
    check!(
        "age-on-hit",
        "RFC 9111 §5.1",
        "a reused response carries Age of at least its time in the cache",
        age_on_hit
    ),
    check!(
        "age-from-upstream-kept",
        "RFC 9111 §4.2.3",
        "an Age from upstream is passed on and grows",
        age_upstream_kept
    ),
    check!(
        "age-from-upstream-counts",
        "RFC 9111 §4.2.3",
        "an Age from upstream counts against max-age",
        age_upstream_counts
    ),
    check!(
        "age-over-max-age",
        "RFC 9111 §4.2.3",
        "a response arriving with Age over max-age is stale at once",
        age_over_max_age
    ),
    check!(
        "date-apparent-age",
        "RFC 9111 §4.2.3",
        "a Date 30 s old with max-age=10 makes the response stale at once",
        date_apparent_age
    ),
    check!(
        "unknown-directive-ignored",
        "RFC 9111 §5.2.3",
        "unknown cache directives are ignored",
        unknown_directive
    ),
    check!(
        "quoted-max-age",
        "RFC 9111 §5.2",
        "max-age=\"60\" (quoted) is understood",
        quoted_max_age
    ),
];

fn fresh_max_age(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "max-age=60")]);
    must(r, said(r))
}

fn stale_after(c: &Ctx, headers: &'static [(&'static str, &'static str)], wait: f64) -> Outcome {
    let p = super::versioned(c, "x", headers);
    c.get(&p, &[]);
    c.wait(wait);
    let r = c.get(&p, &[]);
    let forwarded = c.count(&p) == 2 && r.text() == "v2";
    must(forwarded, format!("after {wait} s: {}", said(!forwarded)))
}

fn stale_max_age(c: &Ctx) -> Outcome {
    stale_after(c, &[("Cache-Control", "max-age=1")], 2.2)
}

fn fresh_s_maxage(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "s-maxage=60")]);
    must(r, said(r))
}

fn s_maxage_wins(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "max-age=0, s-maxage=60")]);
    must(r, said(r))
}

fn s_maxage_stale(c: &Ctx) -> Outcome {
    stale_after(c, &[("Cache-Control", "max-age=60, s-maxage=1")], 2.2)
}

/// Two GETs of a path whose replies carry `headers(now)`; true if the
/// second was served from the store.
fn reused_with(
    c: &Ctx,
    headers: impl Fn() -> Vec<(String, String)> + Send + Sync + 'static,
) -> bool {
    let p = c.serve("x", move |s| {
        let hs = headers();
        let hs: Vec<(&str, &str)> = hs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        Reply::ok(&hs, &version(s))
    });
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    c.count(&p) == 1 && r.text() == "v1"
}

fn h(n: &str, v: String) -> (String, String) {
    (n.to_string(), v)
}

fn fresh_expires(c: &Ctx) -> Outcome {
    let r = reused_with(c, || vec![h("Expires", date(60))]);
    must(r, said(r))
}

fn expires_past(c: &Ctx) -> Outcome {
    let r = reused_with(c, || vec![h("Expires", date(-60))]);
    must(!r, said(r))
}

fn expires_invalid(c: &Ctx) -> Outcome {
    let r = reused_with(c, || vec![h("Expires", "0".into())]);
    must(!r, said(r))
}

fn max_age_over_expires(c: &Ctx) -> Outcome {
    let r = reused_with(c, || {
        vec![
            h("Cache-Control", "max-age=60".into()),
            h("Expires", date(-60)),
        ]
    });
    must(r, said(r))
}

fn max_age_over_future_expires(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let e = date(3600);
        Reply::ok(
            &[("Cache-Control", "max-age=1"), ("Expires", &e)],
            &version(s),
        )
    });
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    let forwarded = c.count(&p) == 2 && r.text() == "v2";
    must(forwarded, said(!forwarded))
}

fn heuristic(c: &Ctx) -> Outcome {
    let r = reused_with(c, || vec![h("Last-Modified", date(-10 * 86400))]);
    may(r, said(r))
}

fn heuristic_302(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let lm = date(-10 * 86400);
        Reply::new(
            302,
            &[("Location", "/elsewhere"), ("Last-Modified", &lm)],
            &version(s),
        )
    });
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    let reused = c.count(&p) == 1 && r.text() == "v1";
    must(!reused, said(reused))
}

fn age_on_hit(c: &Ctx) -> Outcome {
    let p = super::versioned(c, "x", &[("Cache-Control", "max-age=60")]);
    c.get(&p, &[]);
    c.wait(1.2);
    let r = c.get(&p, &[]);
    if c.count(&p) != 1 {
        return crate::check::fail("second request went to the origin");
    }
    must(
        r.age().is_some_and(|a| a >= 1),
        format!("Age on the hit: {:?}", r.header("age")),
    )
}

fn age_upstream_kept(c: &Ctx) -> Outcome {
    let p = super::versioned(c, "x", &[("Cache-Control", "max-age=600"), ("Age", "30")]);
    c.get(&p, &[]);
    c.wait(1.1);
    let r = c.get(&p, &[]);
    let ok = c.count(&p) == 1 && r.age().is_some_and(|a| a >= 31);
    must(
        ok,
        format!(
            "Age on the hit: {:?} (31 or more expected)",
            r.header("age")
        ),
    )
}

fn age_upstream_counts(c: &Ctx) -> Outcome {
    stale_after(c, &[("Cache-Control", "max-age=60"), ("Age", "59")], 2.2)
}

fn age_over_max_age(c: &Ctx) -> Outcome {
    let (r, n) = twice(c, &[("Cache-Control", "max-age=60"), ("Age", "100")]);
    let reused = n == 1 && r.text() == "v1";
    must(!reused, said(reused))
}

fn date_apparent_age(c: &Ctx) -> Outcome {
    let r = reused_with(c, || {
        vec![
            h("Cache-Control", "max-age=10".into()),
            h("Date", date(-30)),
        ]
    });
    must(!r, said(r))
}

fn unknown_directive(c: &Ctx) -> Outcome {
    let r = reused(
        c,
        &[("Cache-Control", "foo=\"bar, baz\", max-age=60, x-ext")],
    );
    must(r, said(r))
}

fn quoted_max_age(c: &Ctx) -> Outcome {
    let r = reused(c, &[("Cache-Control", "max-age=\"60\"")]);
    may(r, said(r))
}
