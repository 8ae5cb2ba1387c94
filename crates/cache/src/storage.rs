//! Whether a shared cache may store a response, and what it must leave
//! out of the stored copy (RFC 9111 §3, §3.5, §5.2.2).
//!
//! Choices where the RFC leaves room, all on the safe side:
//! - 206 is never stored: this cache keeps no partial content.
//! - `Set-Cookie`: RFC 9111 lets it be cached, but a cookie is one
//!   client's; a reply setting one is stored only when the origin made it
//!   explicitly shareable (`public`, `s-maxage`) or named `Set-Cookie` in
//!   `no-cache=`/`private=`, and the stored copy never carries it.
//! - `no-cache="f"` fields are dropped when the copy is stored rather than
//!   on each reuse: cheaper on hits, and RFC 9111 §5.2.2.4 only requires
//!   that they are not sent without revalidation.
//! - A request with a body (even a GET) fills nothing: its reply may
//!   depend on content the key does not capture.

use crate::control::Directives;
use crate::freshness::heuristically_cacheable;
use crate::targeted::Targeted;

/// Why a response is not stored, with a stable short name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    RequestBody,
    RequestNoStore,
    NoStore,
    Private,
    Authorization,
    SetCookie,
    Partial,
    /// Not final, not understood, or not cacheable without explicit
    /// freshness.
    Status,
}

impl Refusal {
    pub fn name(self) -> &'static str {
        match self {
            Refusal::RequestBody => "request-body",
            Refusal::RequestNoStore => "request-no-store",
            Refusal::NoStore => "no-store",
            Refusal::Private => "private",
            Refusal::Authorization => "authorization",
            Refusal::SetCookie => "set-cookie",
            Refusal::Partial => "partial",
            Refusal::Status => "status",
        }
    }
}

/// The storage decision for one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Store it without these fields (lowercase names).
    Store {
        strip: Vec<String>,
    },
    Refuse(Refusal),
}

impl Storage {
    pub fn is_store(&self) -> bool {
        matches!(self, Storage::Store { .. })
    }

    /// Fields to remove from the stored copy (none when refused).
    pub fn strip(&self) -> &[String] {
        match self {
            Storage::Store { strip } => strip,
            Storage::Refuse(_) => &[],
        }
    }
}

/// The status rule of §3: final, understood, not partial, and either
/// explicitly fresh, `public`, or heuristically cacheable.
pub(crate) fn status_storable(status: u16, reply: &Directives, has_expires: bool) -> bool {
    let understood = (200..600).contains(&status) && status != 304;
    let explicit = has_expires || reply.max_age.is_some() || reply.s_maxage.is_some();
    understood && status != 206 && (explicit || reply.public || heuristically_cacheable(status))
}

/// Whether a shared cache may store a reply (RFC 9111 §3): a GET, a status
/// it understands, neither side saying `no-store`, not `private`, and
/// either explicit freshness, `public` or a heuristically cacheable status.
/// `authorized`: the request carried `Authorization` (§3.5). See
/// [`storable_with`] for the full decision.
pub fn storable(
    status: u16,
    request: &Directives,
    reply: &Directives,
    has_expires: bool,
    authorized: bool,
) -> bool {
    if request.no_store || reply.no_store || reply.private {
        return false;
    }
    if authorized && !(reply.public || reply.s_maxage.is_some() || reply.must_revalidate) {
        return false;
    }
    status_storable(status, reply, has_expires)
}

/// Whether a shared cache may store a `status` reply to a GET, from both
/// messages' headers. `request_body`: the request carried content
/// (`Content-Length` > 0 or chunked). `targeted`: the fields this cache
/// obeys over `Cache-Control` (RFC 9213).
pub fn storable_with<'a, 'b, R, H>(
    status: u16,
    request: R,
    response: H,
    request_body: bool,
    targeted: &Targeted,
) -> Storage
where
    R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    H: IntoIterator<Item = (&'b str, &'b [u8])> + Clone,
{
    if request_body {
        return Storage::Refuse(Refusal::RequestBody);
    }
    if Directives::parse(request.clone()).no_store {
        return Storage::Refuse(Refusal::RequestNoStore);
    }
    let (reply, has_expires) = match targeted.directives(response.clone()) {
        Some(d) => (d, false),
        None => (
            Directives::parse(response.clone()),
            has(response.clone(), "expires"),
        ),
    };
    if reply.no_store {
        return Storage::Refuse(Refusal::NoStore);
    }
    if reply.private {
        return Storage::Refuse(Refusal::Private);
    }
    if status == 206 {
        return Storage::Refuse(Refusal::Partial);
    }
    if !status_storable(status, &reply, has_expires) {
        return Storage::Refuse(Refusal::Status);
    }
    let shareable = reply.public || reply.s_maxage.is_some();
    if has(request, "authorization") && !(shareable || reply.must_revalidate) {
        return Storage::Refuse(Refusal::Authorization);
    }
    let mut strip = reply.private_fields;
    for f in reply.no_cache_fields {
        if !strip.contains(&f) {
            strip.push(f);
        }
    }
    if has(response, "set-cookie") && !strip.iter().any(|f| f == "set-cookie") {
        if !shareable {
            return Storage::Refuse(Refusal::SetCookie);
        }
        strip.push("set-cookie".into());
    }
    Storage::Store { strip }
}

fn has<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>, name: &str) -> bool {
    headers
        .into_iter()
        .any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// Header lines (`Name: value\r\n` each) without the fields named in
/// `names` (case-insensitive).
pub fn strip_fields(head: &[u8], names: &[impl AsRef<str>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len());
    for line in head.split_inclusive(|&b| b == b'\n') {
        let name = line
            .iter()
            .position(|&b| b == b':')
            .map_or(&line[..0], |i| line[..i].trim_ascii());
        if !names
            .iter()
            .any(|n| n.as_ref().as_bytes().eq_ignore_ascii_case(name))
        {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(
        status: u16,
        req: &[(&str, &str)],
        resp: &[(&str, &str)],
        body: bool,
        t: &Targeted,
    ) -> Storage {
        storable_with(
            status,
            req.iter().map(|(n, v)| (*n, v.as_bytes())),
            resp.iter().map(|(n, v)| (*n, v.as_bytes())),
            body,
            t,
        )
    }

    fn plain(req: &[(&str, &str)], resp: &[(&str, &str)]) -> Storage {
        decide(200, req, resp, false, &Targeted::none())
    }

    const FRESH: (&str, &str) = ("Cache-Control", "max-age=60");

    #[test]
    fn rfc9111_3_no_store_private_and_statuses() {
        assert_eq!(plain(&[], &[FRESH]), Storage::Store { strip: vec![] });
        assert_eq!(
            plain(&[("Cache-Control", "no-store")], &[FRESH]),
            Storage::Refuse(Refusal::RequestNoStore)
        );
        assert_eq!(
            plain(&[], &[("Cache-Control", "max-age=5, no-store")]),
            Storage::Refuse(Refusal::NoStore)
        );
        assert_eq!(
            plain(&[], &[("Cache-Control", "private, max-age=5")]),
            Storage::Refuse(Refusal::Private)
        );
        let t = Targeted::none();
        assert_eq!(
            decide(206, &[], &[FRESH], false, &t),
            Storage::Refuse(Refusal::Partial)
        );
        assert_eq!(
            decide(302, &[], &[], false, &t),
            Storage::Refuse(Refusal::Status)
        );
        assert!(decide(302, &[], &[FRESH], false, &t).is_store());
        assert!(decide(307, &[], &[("Expires", "0")], false, &t).is_store());
        assert!(decide(404, &[], &[], false, &t).is_store());
        assert_eq!(
            decide(304, &[], &[FRESH], false, &t),
            Storage::Refuse(Refusal::Status)
        );
        assert_eq!(
            decide(100, &[], &[FRESH], false, &t),
            Storage::Refuse(Refusal::Status)
        );
        assert_eq!(Refusal::SetCookie.name(), "set-cookie");
    }

    #[test]
    fn rfc9111_3_request_with_a_body_is_not_stored() {
        let t = Targeted::none();
        assert_eq!(
            decide(200, &[], &[FRESH], true, &t),
            Storage::Refuse(Refusal::RequestBody)
        );
    }

    #[test]
    fn rfc9111_3_5_authorization_needs_public_s_maxage_or_must_revalidate() {
        let auth = [("Authorization", "Basic eDp5")];
        assert_eq!(
            plain(&auth, &[FRESH]),
            Storage::Refuse(Refusal::Authorization)
        );
        assert_eq!(
            plain(&auth, &[("Cache-Control", "max-age=5, proxy-revalidate")]),
            Storage::Refuse(Refusal::Authorization)
        );
        for ok in ["public", "s-maxage=5", "max-age=5, must-revalidate"] {
            assert!(plain(&auth, &[("Cache-Control", ok)]).is_store(), "{ok}");
        }
    }

    #[test]
    fn rfc9111_5_2_2_private_and_no_cache_field_lists_are_stripped() {
        let s = plain(
            &[],
            &[(
                "Cache-Control",
                "max-age=5, private=\"X-A\", no-cache=\"x-b, X-A\"",
            )],
        );
        assert_eq!(s.strip(), ["x-a", "x-b"]);
        // Unqualified no-cache: stored, to be validated before each use.
        assert_eq!(
            plain(&[], &[("Cache-Control", "no-cache")]),
            Storage::Store { strip: vec![] }
        );
    }

    #[test]
    fn set_cookie_is_stored_only_when_shareable_and_never_kept() {
        let cookie = ("Set-Cookie", "id=1");
        assert_eq!(
            plain(&[], &[FRESH, cookie]),
            Storage::Refuse(Refusal::SetCookie)
        );
        assert_eq!(
            plain(&[], &[("Cache-Control", "public"), cookie]).strip(),
            ["set-cookie"]
        );
        assert_eq!(
            plain(&[], &[("Cache-Control", "s-maxage=9"), cookie]).strip(),
            ["set-cookie"]
        );
        // Named by the origin itself: stripped, the rest shareable.
        let s = plain(
            &[],
            &[
                ("Cache-Control", "max-age=9, no-cache=\"Set-Cookie\""),
                cookie,
            ],
        );
        assert_eq!(s.strip(), ["set-cookie"]);
    }

    #[test]
    fn rfc9213_targeted_field_decides_storage() {
        let cdn = Targeted::cdn();
        let h = [
            ("Cache-Control", "no-store"),
            ("CDN-Cache-Control", "max-age=60"),
        ];
        assert!(decide(200, &[], &h, false, &cdn).is_store());
        assert_eq!(
            decide(200, &[], &h, false, &Targeted::none()),
            Storage::Refuse(Refusal::NoStore)
        );
        let h = [
            ("Cache-Control", "max-age=60"),
            ("CDN-Cache-Control", "no-store"),
        ];
        assert_eq!(
            decide(200, &[], &h, false, &cdn),
            Storage::Refuse(Refusal::NoStore)
        );
        // Expires is ignored once the targeted field is valid.
        let h = [
            ("Expires", "Fri, 15 Jan 2027 08:00:00 GMT"),
            ("CDN-Cache-Control", "must-revalidate"),
        ];
        assert_eq!(
            decide(302, &[], &h, false, &cdn),
            Storage::Refuse(Refusal::Status)
        );
    }

    #[test]
    fn strip_fields_removes_named_lines_case_insensitively() {
        let head = b"A: 1\r\nSet-Cookie: x\r\nset-cookie: y\r\nB: 2\r\n";
        assert_eq!(strip_fields(head, &["SET-COOKIE"]), b"A: 1\r\nB: 2\r\n");
        assert_eq!(strip_fields(head, &[] as &[&str]), head);
    }

    #[test]
    fn rfc9111_3_what_a_shared_cache_may_store() {
        let d = |s: &str| Directives::parse([("Cache-Control", s.as_bytes())]);
        let none = Directives::default();
        assert!(storable(200, &none, &d("public"), false, false));
        assert!(!storable(200, &none, &d("private, no-cache"), true, false));
        assert!(!storable(200, &d("no-store"), &none, false, false));
        assert!(!storable(200, &none, &d("no-store"), false, false));
        assert!(!storable(200, &none, &none, false, true));
        assert!(storable(200, &none, &d("s-maxage=5"), false, true));
        assert!(storable(200, &none, &d("must-revalidate"), false, true));
        assert!(!storable(200, &none, &d("proxy-revalidate"), false, true));
        assert!(!storable(302, &none, &none, false, false));
        assert!(storable(302, &none, &d("max-age=5"), false, false));
        assert!(storable(302, &none, &d("public"), false, false));
        assert!(!storable(500, &none, &none, false, false));
        assert!(!storable(206, &none, &d("max-age=5"), false, false));
        assert!(!storable(304, &none, &d("max-age=5"), false, false));
        assert!(!storable(101, &none, &d("max-age=5"), false, false));
        assert!(storable(204, &none, &none, false, false));
    }
}
