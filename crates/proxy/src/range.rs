//! Range requests answered from a stored complete object (RFC 9110 §14):
//! one range as a 206 with `Content-Range`, several as
//! `multipart/byteranges`, none satisfiable as a 416, and `If-Range`
//! deciding between the part and the whole. Partial replies from the
//! origin are relayed, never stored or combined.

use cacheoff_cache::Object;
use cacheoff_http::{date, RequestHead};

/// More ranges than this in one request get the whole object: a request
/// for many small or overlapping ranges costs more than it saves
/// (RFC 9110 §14.2 lets a server ignore such a Range).
const MAX_RANGES: usize = 16;

/// What a stored object's reply is, given the request's `Range`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ranged {
    Whole,
    /// Inclusive byte ranges, sorted and coalesced, within the body.
    Parts(Vec<(u64, u64)>),
    Unsatisfiable,
}

/// Decides how to answer `req` from `obj`.
pub(crate) fn decide(req: &RequestHead, obj: &Object) -> Ranged {
    let Some(range) = header(req, "range") else {
        return Ranged::Whole;
    };
    if obj.status != 200 || !if_range_holds(req, obj) {
        return Ranged::Whole;
    }
    match parse(range, obj.body.len() as u64) {
        Some(Ok(parts)) if parts.len() <= MAX_RANGES => Ranged::Parts(parts),
        Some(Err(Unsatisfiable)) => Ranged::Unsatisfiable,
        // A Range we cannot read, or too many ranges: the whole object.
        _ => Ranged::Whole,
    }
}

fn header<'a>(req: &'a RequestHead, name: &str) -> Option<&'a [u8]> {
    let mut lines = req
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name));
    let first = lines.next()?;
    // A repeated Range or If-Range is not one we can trust.
    lines.next().is_none().then_some(first.1.as_slice())
}

/// `If-Range` (RFC 9110 §13.1.5): the range applies only if the stored
/// object is the one the client has part of, by a strong comparison.
fn if_range_holds(req: &RequestHead, obj: &Object) -> bool {
    let Some(v) = header(req, "if-range") else {
        return req
            .headers
            .iter()
            .all(|(n, _)| !n.eq_ignore_ascii_case("if-range"));
    };
    let v = v.trim_ascii();
    let stored = |name: &str| {
        obj.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim_ascii())
    };
    if v.starts_with(b"\"") {
        return stored("etag").is_some_and(|tag| tag == v);
    }
    if v.starts_with(b"W/") {
        return false;
    }
    // A date validates only if it is the stored Last-Modified and that is
    // strong: at least a second before the reply's Date.
    let (Some(asked), Some(lm)) = (date::parse(v), obj.fresh.last_modified) else {
        return false;
    };
    asked == lm && obj.fresh.date > lm
}

#[derive(Debug, PartialEq, Eq)]
struct Unsatisfiable;

/// Parses a `bytes=` range set against a body of `len` bytes: `None` if
/// it is not one (then it is ignored), the satisfiable ranges sorted and
/// coalesced, or `Unsatisfiable` when none is.
fn parse(v: &[u8], len: u64) -> Option<Result<Vec<(u64, u64)>, Unsatisfiable>> {
    let v = std::str::from_utf8(v).ok()?.trim();
    let (unit, set) = v.split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    let mut parts = Vec::new();
    let mut any = false;
    for spec in set.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        any = true;
        let (first, last) = spec.split_once('-')?;
        let num = |s: &str| -> Option<u64> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Too many digits to be a position in any body: the end.
            Some(s.parse().unwrap_or(u64::MAX))
        };
        let range = if first.is_empty() {
            // The last `n` bytes.
            let n = num(last)?;
            (n > 0 && len > 0).then(|| (len.saturating_sub(n), len - 1))
        } else {
            let a = num(first)?;
            let b = if last.is_empty() {
                u64::MAX
            } else {
                num(last)?
            };
            if b < a {
                return None;
            }
            (a < len).then(|| (a, b.min(len - 1)))
        };
        parts.extend(range);
    }
    if !any {
        return None;
    }
    if parts.is_empty() {
        return Some(Err(Unsatisfiable));
    }
    parts.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(parts.len());
    for (a, b) in parts {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Some(Ok(merged))
}

/// The boundary of multipart replies: fixed, and not a byte sequence
/// generated bodies contain.
pub(crate) const BOUNDARY: &str = "cacheoff-byteranges-5f3a9c";

/// The body of a `multipart/byteranges` reply (RFC 9110 §14.6).
pub(crate) fn multipart(body: &[u8], parts: &[(u64, u64)], content_type: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let len = body.len();
    for &(a, b) in parts {
        out.extend_from_slice(format!("\r\n--{BOUNDARY}\r\n").as_bytes());
        if !content_type.is_empty() {
            out.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        out.extend_from_slice(format!("Content-Range: bytes {a}-{b}/{len}\r\n\r\n").as_bytes());
        out.extend_from_slice(&body[a as usize..=b as usize]);
    }
    out.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &str, len: u64) -> Option<Result<Vec<(u64, u64)>, Unsatisfiable>> {
        parse(v.as_bytes(), len)
    }

    #[test]
    fn rfc9110_14_1_2_byte_ranges_of_every_form() {
        assert_eq!(p("bytes=0-4", 10), Some(Ok(vec![(0, 4)])));
        assert_eq!(p("bytes=5-", 10), Some(Ok(vec![(5, 9)])));
        assert_eq!(p("bytes=-3", 10), Some(Ok(vec![(7, 9)])));
        // Past the end: cut to it; a suffix longer than the body: all of it.
        assert_eq!(p("bytes=8-100", 10), Some(Ok(vec![(8, 9)])));
        assert_eq!(p("bytes=-100", 10), Some(Ok(vec![(0, 9)])));
        assert_eq!(p("BYTES = 1-1", 10), Some(Ok(vec![(1, 1)])));
        assert_eq!(
            p("bytes=99999999999999999999999-", 10),
            Some(Err(Unsatisfiable))
        );
    }

    #[test]
    fn rfc9110_14_2_overlapping_ranges_coalesce_and_unsatisfiable_ones_drop() {
        assert_eq!(p("bytes=0-4,2-6", 10), Some(Ok(vec![(0, 6)])));
        assert_eq!(p("bytes=6-7, 0-1", 10), Some(Ok(vec![(0, 1), (6, 7)])));
        // Adjacent ranges are one.
        assert_eq!(p("bytes=0-1,2-3", 10), Some(Ok(vec![(0, 3)])));
        assert_eq!(p("bytes=20-30,0-0", 10), Some(Ok(vec![(0, 0)])));
        assert_eq!(p("bytes=10-", 10), Some(Err(Unsatisfiable)));
        assert_eq!(p("bytes=-0", 10), Some(Err(Unsatisfiable)));
        assert_eq!(p("bytes=0-", 0), Some(Err(Unsatisfiable)));
    }

    #[test]
    fn rfc9110_14_2_a_range_that_is_not_one_is_ignored() {
        for bad in [
            "bytes=5-1",
            "bytes=a-b",
            "bytes=",
            "items=0-1",
            "bytes=1",
            "bytes=+1-2",
            "bytes 0-1",
            "bytes=0-1,x",
        ] {
            assert_eq!(p(bad, 10), None, "{bad}");
        }
    }

    #[test]
    fn multipart_parts_carry_their_ranges() {
        let body = b"0123456789";
        let m = multipart(body, &[(0, 1), (8, 9)], "text/plain");
        let text = String::from_utf8(m).unwrap();
        assert_eq!(
            text,
            format!(
                "\r\n--{BOUNDARY}\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/10\r\n\r\n01\
                 \r\n--{BOUNDARY}\r\nContent-Type: text/plain\r\nContent-Range: bytes 8-9/10\r\n\r\n89\
                 \r\n--{BOUNDARY}--\r\n"
            )
        );
    }
}
