//! `Vary` (RFC 9111 §4.1): a stored response answers only requests whose
//! nominated fields match.

use super::{check, said};
use crate::check::{may, must, Check, Ctx, Outcome};
use crate::origin::Reply;

pub const CHECKS: &[Check] = &[
    check!(
        "vary-match",
        "RFC 9111 §4.1",
        "Vary: Accept-Language, same value: reused",
        vary_match
    ),
    check!(
        "vary-mismatch",
        "RFC 9111 §4.1",
        "Vary: Accept-Language, other value: not reused",
        vary_mismatch
    ),
    check!(
        "vary-star",
        "RFC 9111 §4.1",
        "Vary: * never matches",
        vary_star
    ),
    check!(
        "vary-absent-absent",
        "RFC 9111 §4.1",
        "a field absent from both requests matches",
        vary_absent_absent
    ),
    check!(
        "vary-absent-present",
        "RFC 9111 §4.1",
        "a field absent from the stored request but present now does not match",
        vary_absent_present
    ),
    check!(
        "vary-two-fields",
        "RFC 9111 §4.1",
        "Vary on two fields: a change in the second does not match",
        vary_two_fields
    ),
    check!(
        "vary-normalised",
        "RFC 9111 §4.1",
        "whitespace after commas is normalised before comparing",
        vary_normalised
    ),
    check!(
        "vary-variants-kept",
        "RFC 9111 §4.1",
        "two variants are both kept and reused",
        vary_variants_kept
    ),
    check!(
        "vary-field-name-case",
        "RFC 9111 §4.1",
        "field names in Vary match case-insensitively",
        vary_name_case
    ),
];

/// A path varying on `vary`, its body naming the request's values.
fn varying(c: &Ctx, vary: &'static str) -> String {
    c.serve("x", move |s| {
        let mut body = super::version(s);
        for f in vary.split(',') {
            body.push_str(&format!(" {}", s.header(f.trim()).unwrap_or("-")));
        }
        Reply::ok(&[("Cache-Control", "max-age=60"), ("Vary", vary)], &body)
    })
}

/// Two requests with `first` then `second` headers; whether the second
/// was answered from the store.
fn second_reused(
    c: &Ctx,
    vary: &'static str,
    first: &[(&str, &str)],
    second: &[(&str, &str)],
) -> bool {
    let p = varying(c, vary);
    c.get(&p, first);
    let r = c.get(&p, second);
    c.count(&p) == 1 && r.text().starts_with("v1")
}

fn vary_match(c: &Ctx) -> Outcome {
    let al = [("Accept-Language", "en")];
    let r = second_reused(c, "Accept-Language", &al, &al);
    must(r, said(r))
}

fn vary_mismatch(c: &Ctx) -> Outcome {
    let r = second_reused(
        c,
        "Accept-Language",
        &[("Accept-Language", "en")],
        &[("Accept-Language", "fr")],
    );
    must(!r, said(r))
}

fn vary_star(c: &Ctx) -> Outcome {
    let r = second_reused(c, "*", &[], &[]);
    must(!r, said(r))
}

fn vary_absent_absent(c: &Ctx) -> Outcome {
    let r = second_reused(c, "X-Flavour", &[], &[]);
    may(r, said(r))
}

fn vary_absent_present(c: &Ctx) -> Outcome {
    let r = second_reused(c, "X-Flavour", &[], &[("X-Flavour", "mint")]);
    must(!r, said(r))
}

fn vary_two_fields(c: &Ctx) -> Outcome {
    let r = second_reused(
        c,
        "Accept-Language, X-Flavour",
        &[("Accept-Language", "en"), ("X-Flavour", "mint")],
        &[("Accept-Language", "en"), ("X-Flavour", "lime")],
    );
    must(!r, said(r))
}

fn vary_normalised(c: &Ctx) -> Outcome {
    let r = second_reused(
        c,
        "X-Flavour",
        &[("X-Flavour", "mint,lime")],
        &[("X-Flavour", "mint, lime")],
    );
    may(r, said(r))
}

fn vary_variants_kept(c: &Ctx) -> Outcome {
    let p = varying(c, "Accept-Language");
    c.get(&p, &[("Accept-Language", "en")]);
    c.get(&p, &[("Accept-Language", "fr")]);
    let en = c.get(&p, &[("Accept-Language", "en")]);
    let fr = c.get(&p, &[("Accept-Language", "fr")]);
    let n = c.count(&p);
    let wrong = !en.text().ends_with(" en") || !fr.text().ends_with(" fr");
    if wrong {
        return must(
            false,
            format!(
                "a variant answered the other language: {:?} {:?}",
                en.text(),
                fr.text()
            ),
        );
    }
    may(
        n == 2,
        format!("origin saw {n} requests for 4 (2 expected)"),
    )
}

fn vary_name_case(c: &Ctx) -> Outcome {
    let p = c.serve("x", |s| {
        let body = format!(
            "{} {}",
            super::version(s),
            s.header("x-flavour").unwrap_or("-")
        );
        Reply::ok(
            &[("Cache-Control", "max-age=60"), ("Vary", "x-FLAVOUR")],
            &body,
        )
    });
    c.get(&p, &[("X-Flavour", "mint")]);
    let same = c.get(&p, &[("x-flavour", "mint")]);
    let other = c.get(&p, &[("X-FLAVOUR", "lime")]);
    let detail = format!(
        "same value got {:?}, other value got {:?}",
        same.text(),
        other.text()
    );
    if !other.text().ends_with(" lime") {
        return must(false, detail);
    }
    may(same.text() == "v1 mint", detail)
}
