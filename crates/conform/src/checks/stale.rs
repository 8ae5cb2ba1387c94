//! Serving stale (RFC 9111 §4.2.4, RFC 5861): only when allowed, and
//! `stale-while-revalidate` / `stale-if-error` when the origin allows it.

use super::check;
use crate::check::{fail, may, must, pass, Check, Ctx, Outcome};
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!("swr-serves-stale", "RFC 5861 §3", "stale-while-revalidate: the stale response is served at once", swr_serves),
    check!("swr-refreshes", "RFC 5861 §3", "stale-while-revalidate: the origin is asked in the background (304) and the store freshened", swr_refreshes),
    check!("swr-refreshes-no-validator", "RFC 5861 §3", "stale-while-revalidate without validators: the origin is still asked in the background", swr_refreshes_bare),
    check!("swr-window-over", "RFC 5861 §3", "past the stale-while-revalidate window the stale response is not served", swr_over),
    check!("sie-on-500", "RFC 5861 §4", "stale-if-error: a 500 from the origin gets the stale response", sie_500),
    check!("sie-on-down", "RFC 5861 §4", "stale-if-error: an origin that closes gets the stale response", sie_down),
    check!("sie-on-500-no-validator", "RFC 5861 §4", "stale-if-error without validators: a 500 gets the stale response", sie_500_bare),
    check!("sie-window-over", "RFC 5861 §4", "past the stale-if-error window the error is passed on", sie_over),
    check!("stale-not-on-error-by-default", "RFC 9111 §4.2.4", "without permission a stale response does not replace the origin's 500", stale_default),
];

/// `/x` answered first with `cc` and body v1, later with `later`.
fn then(
    c: &Ctx,
    cc: &'static str,
    later: impl Fn(usize) -> Reply + Send + Sync + 'static,
) -> String {
    c.serve("x", move |s| match s.n {
        1 => Reply::ok(&[("Cache-Control", cc)], "v1"),
        n => later(n),
    })
}

/// [`then`] with an ETag on the first reply, so a cache can validate it.
fn then_tagged(
    c: &Ctx,
    cc: &'static str,
    later: impl Fn(usize) -> Reply + Send + Sync + 'static,
) -> String {
    c.serve("x", move |s| match s.n {
        1 => Reply::ok(&[("Cache-Control", cc), ("ETag", "\"t\"")], "v1"),
        n => later(n),
    })
}

fn fresh_v(n: usize) -> Reply {
    Reply::ok(&[("Cache-Control", "max-age=60")], &format!("v{n}"))
}

fn swr_serves(c: &Ctx) -> Outcome {
    let p = then(c, "max-age=1, stale-while-revalidate=30", |n| {
        fresh_v(n).after_ms(3000)
    });
    c.get(&p, &[]);
    c.wait(2.2);
    let t = std::time::Instant::now();
    let r = c.get(&p, &[]);
    let waited = t.elapsed().as_secs_f64();
    may(
        r.text() == "v1" && waited < 2.0,
        format!(
            "got {:?} after {waited:.2} s (the origin takes 3 s)",
            r.text()
        ),
    )
}

fn swr_refreshes(c: &Ctx) -> Outcome {
    let p = then_tagged(c, "max-age=1, stale-while-revalidate=30", |_| {
        Reply::new(
            304,
            &[
                ("Cache-Control", "max-age=60"),
                ("ETag", "\"t\""),
                ("X-Refreshed", "yes"),
            ],
            "",
        )
    });
    refreshed(c, &p, |r| r.text() == "v1")
}

fn swr_refreshes_bare(c: &Ctx) -> Outcome {
    let p = then(c, "max-age=1, stale-while-revalidate=30", fresh_v);
    refreshed(c, &p, |r| r.text() == "v2")
}

/// Served stale, then the origin asked in the background, then the next
/// request answered from the store as `fresh` says.
fn refreshed(c: &Ctx, p: &str, fresh: impl Fn(&crate::client::Resp) -> bool) -> Outcome {
    let p = p.to_string();
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    if r.text() != "v1" {
        return may(false, format!("not served stale: got {:?}", r.text()));
    }
    let asked = c.wait_count(&p, 2, 3.0);
    c.wait(0.3);
    let next = c.get(&p, &[]);
    let ok = asked && fresh(&next) && c.count(&p) == 2;
    must(
        ok,
        format!(
            "origin asked in the background: {asked}; next got {:?}",
            next.text()
        ),
    )
}

fn swr_over(c: &Ctx) -> Outcome {
    let p = then(c, "max-age=1, stale-while-revalidate=1", fresh_v);
    c.get(&p, &[]);
    c.wait(3.5);
    let r = c.get(&p, &[]);
    must(r.text() == "v2", format!("got {:?}", r.text()))
}

fn sie(c: &Ctx, tagged: bool, later: impl Fn(usize) -> Reply + Send + Sync + 'static) -> Outcome {
    let cc = "max-age=1, stale-if-error=60";
    let p = match tagged {
        true => then_tagged(c, cc, later),
        false => then(c, cc, later),
    };
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    if c.count(&p) < 2 {
        return fail("the origin was not asked for the stale response");
    }
    may(
        r.status == 200 && r.text() == "v1",
        format!("got {} {:?}", r.status, r.text()),
    )
}

fn sie_500(c: &Ctx) -> Outcome {
    sie(c, true, |_| Reply::new(500, &[], "broken"))
}

fn sie_down(c: &Ctx) -> Outcome {
    sie(c, true, |_| Reply::Close)
}

fn sie_500_bare(c: &Ctx) -> Outcome {
    sie(c, false, |_| Reply::new(500, &[], "broken"))
}

fn sie_over(c: &Ctx) -> Outcome {
    let p = then_tagged(c, "max-age=1, stale-if-error=1", |_| {
        Reply::new(500, &[], "broken")
    });
    c.get(&p, &[]);
    c.wait(3.5);
    let r = c.get(&p, &[]);
    match r.text().as_str() {
        "v1" => fail("the stale response was served past its window"),
        _ => pass(format!("got {}", r.status)),
    }
}

fn stale_default(c: &Ctx) -> Outcome {
    let p = then(c, "max-age=1", |_| Reply::new(500, &[], "broken"));
    c.get(&p, &[]);
    c.wait(2.2);
    let r = c.get(&p, &[]);
    must(r.text() != "v1", format!("got {} {:?}", r.status, r.text()))
}
