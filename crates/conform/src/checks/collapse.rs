//! Request collapsing (RFC 9111 §4: a cache MAY wait for a response in
//! progress), and what it must not share.

use super::check;
use crate::check::{fail, may, must, Check, Ctx, Outcome};
use crate::client::Resp;
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!(
        "collapse-concurrent",
        "RFC 9111 §4",
        "5 concurrent requests for one slow cacheable response reach the origin once",
        concurrent
    ),
    check!(
        "collapse-no-store-not-shared",
        "RFC 9111 §5.2.2.5",
        "concurrent requests for a no-store response each get their own",
        no_store
    ),
    check!(
        "collapse-private-not-shared",
        "RFC 9111 §5.2.2.7",
        "concurrent requests for a private response each get their own",
        private
    ),
    check!(
        "collapse-vary-respected",
        "RFC 9111 §4.1",
        "concurrent requests with different Accept-Language get their own variants",
        vary
    ),
];

/// `n` requests for `path` at once, each with its own headers.
fn at_once(c: &Ctx, path: &str, headers: Vec<Vec<(&'static str, String)>>) -> Vec<Resp> {
    std::thread::scope(|s| {
        let hs: Vec<_> = headers
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                s.spawn(move || {
                    // Staggered so the first is in flight when the others come.
                    std::thread::sleep(std::time::Duration::from_millis(if i == 0 {
                        0
                    } else {
                        200
                    }));
                    let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
                    c.get(path, &h)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn concurrent(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        Reply::ok(&[("Cache-Control", "max-age=60")], &super::version(s)).after_ms(1000)
    });
    let rs = at_once(c, &p, vec![vec![]; 5]);
    if rs.iter().any(|r| r.status != 200) {
        return fail(format!(
            "statuses {:?}",
            rs.iter().map(|r| r.status).collect::<Vec<_>>()
        ));
    }
    let n = c.count(&p);
    may(n == 1, format!("origin saw {n} requests for 5"))
}

/// Concurrent requests for a response with `cc`: each must get its own
/// (the origin numbers them).
fn own_each(c: &Ctx, cc: &'static str) -> Outcome {
    let p = c.serve("x", move |s| {
        Reply::ok(&[("Cache-Control", cc)], &super::version(s)).after_ms(1000)
    });
    let rs = at_once(c, &p, vec![vec![]; 3]);
    let bodies: Vec<String> = rs.iter().map(Resp::text).collect();
    let mut distinct = bodies.clone();
    distinct.sort();
    distinct.dedup();
    must(
        c.count(&p) == 3 && distinct.len() == 3,
        format!(
            "origin saw {} requests for 3; bodies {bodies:?}",
            c.count(&p)
        ),
    )
}

fn no_store(c: &Ctx) -> Outcome {
    own_each(c, "no-store")
}

fn private(c: &Ctx) -> Outcome {
    own_each(c, "private, max-age=60")
}

fn vary(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let body = s.header("accept-language").unwrap_or("-").to_string();
        Reply::ok(
            &[("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")],
            &body,
        )
        .after_ms(1000)
    });
    let langs = ["en", "fr", "de"];
    let rs = at_once(
        c,
        &p,
        langs
            .iter()
            .map(|l| vec![("Accept-Language", l.to_string())])
            .collect(),
    );
    let bodies: Vec<String> = rs.iter().map(Resp::text).collect();
    must(bodies == langs, format!("bodies {bodies:?} for {langs:?}"))
}
