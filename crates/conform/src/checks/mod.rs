//! The checks, one module per subject, and the shapes they share.

use crate::check::{Check, Ctx};
use crate::client::Resp;
use crate::origin::{Reply, Seen};

mod collapse;
mod control;
mod freshness;
mod invalidate;
mod range;
mod stale;
mod status;
mod targeted;
mod validate;
mod vary;

/// Every check, in the order of the docs table.
pub fn all() -> Vec<Check> {
    [
        freshness::CHECKS,
        control::CHECKS,
        vary::CHECKS,
        validate::CHECKS,
        invalidate::CHECKS,
        stale::CHECKS,
        range::CHECKS,
        targeted::CHECKS,
        collapse::CHECKS,
        status::CHECKS,
    ]
    .concat()
}

/// A check row: `check!(id, section, title, fn)` applies in both modes;
/// a fifth argument names the one mode it applies to.
macro_rules! check {
    ($id:expr, $section:expr, $title:expr, $run:path) => {
        $crate::check::Check {
            id: $id,
            section: $section,
            title: $title,
            applies: $crate::check::Applies::Both,
            run: $run,
        }
    };
    ($id:expr, $section:expr, $title:expr, $run:path, $mode:ident) => {
        $crate::check::Check {
            id: $id,
            section: $section,
            title: $title,
            applies: $crate::check::Applies::Only($crate::client::Mode::$mode),
            run: $run,
        }
    };
}
pub(crate) use check;

/// The body the origin sends on its `n`th request for a path: which
/// origin reply a client got shows whether it was stored.
pub fn version(s: &Seen) -> String {
    format!("v{}", s.n)
}

/// A path answered with 200, `headers` and a versioned body.
pub fn versioned(c: &Ctx, name: &str, headers: &'static [(&'static str, &'static str)]) -> String {
    c.serve(name, move |s| Reply::ok(headers, &version(s)))
}

/// Two GETs of a path answered with `headers`; returns the second reply
/// and how many requests reached the origin.
pub fn twice(c: &Ctx, headers: &'static [(&'static str, &'static str)]) -> (Resp, usize) {
    let p = versioned(c, "x", headers);
    c.get(&p, &[]);
    let r = c.get(&p, &[]);
    (r, c.count(&p))
}

/// Whether the second of [`twice`] was served from the store (and with the
/// first reply's body).
pub fn reused(c: &Ctx, headers: &'static [(&'static str, &'static str)]) -> bool {
    let (r, n) = twice(c, headers);
    n == 1 && r.status == 200 && r.text() == "v1"
}

/// Describes a reuse finding for a check's detail.
pub fn said(reused: bool) -> &'static str {
    match reused {
        true => "second request answered from the store",
        false => "second request went to the origin",
    }
}
