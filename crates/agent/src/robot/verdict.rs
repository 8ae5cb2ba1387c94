//! Judging a reply: one pure function, [`judge`], from the facts of an
//! exchange to a verdict (how it was served, or the first thing wrong with
//! it). The exchange reads the wire and asks twice: once the head arrived
//! (to stop reading a reply that already failed), and once the body was
//! read.

use cacheoff_base::{RequestType, XactId};
use cacheoff_http::body::{self as bodies, BodyCheck};
use cacheoff_http::echo::{echo_of, xact_of_echo};
use cacheoff_http::{Framing, ResponseHead};
use cacheoff_stats::{ErrorKind, Outcome};
use cacheoff_workload::ObjectInfo;

/// What transaction `xact` asked for, as far as judging its reply goes:
/// `object` by `rtype` (the type actually sent: an IMS request for an
/// object without `Last-Modified` goes out as basic), sent at `sent_unix`
/// by the wall clock, when the object's `Last-Modified` was `lm_at_send`;
/// `ims_lmt` is the `Last-Modified` its IMS date was derived from.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub xact: XactId,
    pub object: ObjectInfo,
    pub rtype: RequestType,
    pub ims_lmt: Option<i64>,
    pub lm_at_send: Option<i64>,
    pub sent_unix: f64,
}

impl Ask {
    /// A 304, and any reply to HEAD, carries no body.
    pub fn bodiless(&self, head: &ResponseHead) -> bool {
        head.status == 304 || self.rtype == RequestType::Head
    }

    /// Body bytes the reply must carry.
    pub fn body_len(&self, head: &ResponseHead) -> u64 {
        if self.bodiless(head) {
            0
        } else {
            self.object.size
        }
    }
}

/// What the robot has seen of a reply so far, and knows besides.
pub struct Facts<'a> {
    pub head: &'a ResponseHead,
    /// Bytes arrived after the head.
    pub extra: bool,
    /// The body as read and checked; `None` while it is not read yet.
    pub body: Option<&'a BodyCheck>,
    /// The object's `Last-Modified` now.
    pub lm_now: &'a dyn Fn() -> Option<i64>,
    /// Whether a hit carrying the reply of this transaction is false (the
    /// POST ledger).
    pub false_hit: &'a dyn Fn(XactId) -> bool,
}

/// The verdict on a reply from what is known of it: how it was served, or
/// the first thing wrong with it. Without the body it judges the head and
/// the framing it announces.
pub fn judge(ask: &Ask, f: &Facts<'_>) -> Result<Outcome, ErrorKind> {
    let outcome = head(f.head, f.extra, ask)?;
    framing(f.head.framing, ask.body_len(f.head))?;
    let Some(check) = f.body else {
        return Ok(outcome);
    };
    body(check)?;
    reply(f, outcome, ask)?;
    Ok(outcome)
}

/// The head: who served it, or why it is wrong.
fn head(head: &ResponseHead, extra: bool, ask: &Ask) -> Result<Outcome, ErrorKind> {
    if head.status != 200 && head.status != 304 {
        return Err(ErrorKind::HttpStatus);
    }
    let outcome = match head.echo {
        Some(e) if e == echo_of(ask.xact) => Outcome::Miss,
        Some(_) => Outcome::Hit,
        // Caches build 304s from a few stored headers only; the origin
        // always echoes, so an echo-less 304 came from a cache.
        None if head.status == 304 => Outcome::Hit,
        None => return Err(ErrorKind::ForeignSource),
    };
    if ask.bodiless(head) && extra {
        return Err(ErrorKind::UnwantedBody);
    }
    Ok(outcome)
}

/// The announced framing of a body of `size` bytes.
fn framing(framing: Framing, size: u64) -> Result<(), ErrorKind> {
    match framing {
        Framing::Length(0) if size > 0 => Err(ErrorKind::NoBody),
        Framing::Length(n) if n != size => Err(ErrorKind::LengthMismatch),
        _ => Ok(()),
    }
}

/// The body as read: its length and bytes.
fn body(check: &BodyCheck) -> Result<(), ErrorKind> {
    if check.received() == 0 && !check.ok() {
        return Err(ErrorKind::NoBody);
    }
    if !check.intact() {
        return Err(ErrorKind::BodyMismatch);
    }
    if !check.ok() {
        return Err(ErrorKind::LengthMismatch);
    }
    Ok(())
}

/// The whole reply, body read and intact, served as `outcome`.
fn reply(f: &Facts<'_>, outcome: Outcome, ask: &Ask) -> Result<(), ErrorKind> {
    let head = f.head;
    if let Some(md5) = &head.content_md5 {
        if !ask.bodiless(head)
            && md5[..] != bodies::md5_digest(ask.object.body_seed, ask.object.size)
        {
            return Err(ErrorKind::Md5Mismatch);
        }
    }
    // "Not modified since a second before its Last-Modified" is never
    // true: the Lucent bug of the third cache-off (304 judged by Expires).
    if head.status == 304 && ask.rtype == RequestType::Ims200 {
        return Err(ErrorKind::FalseNotModified);
    }
    let want = if ask.rtype == RequestType::Ims304 {
        304
    } else {
        200
    };
    if head.status != want {
        // The object may have changed between the IMS date and the
        // server's answer; then either status is right.
        let changed = ask.ims_lmt.is_some() && (f.lm_now)() != ask.ims_lmt;
        if !changed {
            return Err(ErrorKind::HttpStatus);
        }
    }
    let hit = outcome == Outcome::Hit;
    if hit && ask.rtype == RequestType::Reload {
        return Err(ErrorKind::ReloadHit);
    }
    if hit && ask.rtype == RequestType::Post {
        return Err(ErrorKind::PostHit);
    }
    if hit && head.status == 200 && !ask.object.cachable {
        return Err(ErrorKind::UncachableHit);
    }
    if let (true, Some(echo)) = (hit, head.echo) {
        if (f.false_hit)(xact_of_echo(echo)) {
            return Err(ErrorKind::FalseHit);
        }
    }
    // The origin dates every reply with the version it sends, never one
    // older than the version current at the request.
    let older = matches!((head.last_modified, ask.lm_at_send), (Some(got), Some(cur)) if got < cur);
    // A copy that had expired a whole second before the request (Expires
    // has one-second resolution) was not revalidated.
    let expired = hit
        && head
            .expires
            .is_some_and(|e| (e + 1) as f64 <= ask.sent_unix);
    if head.status == 200 && (older || expired) {
        return Err(ErrorKind::StaleContent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_http::date;
    use cacheoff_http::echo::{write_hex16, ECHO_HEADER};
    use cacheoff_http::response::parse_response;

    const T: i64 = 1_800_000_000;
    const SEED: u64 = 42;

    fn ask(rtype: RequestType) -> Ask {
        Ask {
            xact: XactId::new(1, 7),
            object: ObjectInfo {
                oid: 1,
                ctype: 0,
                ext: None,
                size: 100,
                cachable: true,
                md5: false,
                embeds: 0,
                server: 0,
                body_seed: SEED,
                life_seed: 0,
                traced: false,
            },
            rtype,
            ims_lmt: matches!(rtype, RequestType::Ims200 | RequestType::Ims304).then_some(T),
            lm_at_send: Some(T),
            sent_unix: T as f64 + 50.0,
        }
    }

    /// A head with `status`, the echo of transaction `echo_of_seq` of
    /// worker 1 (none for 0) and extra header lines.
    fn reply_head(status: u16, echo_of_seq: u64, extra: &str) -> ResponseHead {
        let mut h = format!("HTTP/1.1 {status} X\r\nContent-Length: 100\r\n").into_bytes();
        if echo_of_seq > 0 {
            h.extend_from_slice(format!("{ECHO_HEADER}: ").as_bytes());
            write_hex16(&mut h, echo_of(XactId::new(1, echo_of_seq)));
            h.extend_from_slice(b"\r\n");
        }
        h.extend_from_slice(extra.as_bytes());
        h.extend_from_slice(b"\r\n");
        parse_response(&h, false, false).unwrap().unwrap()
    }

    fn lm(t: i64) -> String {
        format!("Last-Modified: {}\r\n", date::format(t))
    }

    /// The whole body a reply with head `h` carries.
    fn whole(h: &ResponseHead, a: &Ask) -> BodyCheck {
        let len = a.body_len(h);
        let mut check = BodyCheck::new(SEED, len);
        let mut bytes = Vec::new();
        bodies::append(&mut bytes, SEED, 0, len);
        check.feed(&bytes);
        check
    }

    /// The verdict on a reply with head `h` and the whole body, where the
    /// object's Last-Modified is still `T` and transaction 3's reply may
    /// no longer be served.
    fn judge_whole(h: &ResponseHead, a: &Ask) -> Result<Outcome, ErrorKind> {
        let check = whole(h, a);
        judge(
            a,
            &Facts {
                head: h,
                extra: false,
                body: Some(&check),
                lm_now: &|| Some(T),
                false_hit: &|x| x == XactId::new(1, 3),
            },
        )
    }

    /// The verdict on the head alone (`extra`: bytes after it).
    fn judge_head(h: &ResponseHead, extra: bool, a: &Ask) -> Result<Outcome, ErrorKind> {
        judge(
            a,
            &Facts {
                head: h,
                extra,
                body: None,
                lm_now: &|| Some(T),
                false_hit: &|_| false,
            },
        )
    }

    #[test]
    fn own_echo_is_a_miss_another_a_hit_none_foreign() {
        let basic = ask(RequestType::Basic);
        assert_eq!(
            judge_whole(&reply_head(200, 7, &lm(T)), &basic),
            Ok(Outcome::Miss)
        );
        assert_eq!(
            judge_whole(&reply_head(200, 5, &lm(T)), &basic),
            Ok(Outcome::Hit)
        );
        assert_eq!(
            judge_whole(&reply_head(200, 0, &lm(T)), &basic),
            Err(ErrorKind::ForeignSource)
        );
        // An echo-less 304 came from a cache.
        let ims = ask(RequestType::Ims304);
        assert_eq!(
            judge_whole(&reply_head(304, 0, &lm(T)), &ims),
            Ok(Outcome::Hit)
        );
    }

    #[test]
    fn wrong_statuses() {
        let basic = ask(RequestType::Basic);
        assert_eq!(
            judge_whole(&reply_head(503, 7, ""), &basic),
            Err(ErrorKind::HttpStatus)
        );
        // A 200 where a 304 was due, for an object that did not change.
        let ims = ask(RequestType::Ims304);
        assert_eq!(
            judge_whole(&reply_head(200, 7, &lm(T)), &ims),
            Err(ErrorKind::HttpStatus)
        );
        // ... is right if it changed meanwhile.
        let changed_head = reply_head(200, 7, &lm(T + 9));
        let check = whole(&changed_head, &ims);
        let changed = Facts {
            head: &changed_head,
            extra: false,
            body: Some(&check),
            lm_now: &|| Some(T + 9),
            false_hit: &|_| false,
        };
        assert_eq!(judge(&ims, &changed), Ok(Outcome::Miss));
        assert_eq!(
            judge_whole(&reply_head(304, 7, &lm(T)), &ask(RequestType::Ims200)),
            Err(ErrorKind::FalseNotModified)
        );
    }

    #[test]
    fn hits_that_must_not_be() {
        let hit = |rtype| judge_whole(&reply_head(200, 5, &lm(T)), &ask(rtype));
        assert_eq!(hit(RequestType::Reload), Err(ErrorKind::ReloadHit));
        assert_eq!(hit(RequestType::Post), Err(ErrorKind::PostHit));
        let mut uncachable = ask(RequestType::Basic);
        uncachable.object.cachable = false;
        assert_eq!(
            judge_whole(&reply_head(200, 5, &lm(T)), &uncachable),
            Err(ErrorKind::UncachableHit)
        );
        // The ledger says transaction 3's reply may no longer be served.
        assert_eq!(
            judge_whole(&reply_head(200, 3, &lm(T)), &ask(RequestType::Basic)),
            Err(ErrorKind::FalseHit)
        );
    }

    #[test]
    fn stale_copies() {
        let basic = ask(RequestType::Basic);
        assert_eq!(
            judge_whole(&reply_head(200, 5, &lm(T - 1)), &basic),
            Err(ErrorKind::StaleContent),
            "an older version than the origin had"
        );
        let expired = format!("Expires: {}\r\n", date::format(T + 10));
        assert_eq!(
            judge_whole(&reply_head(200, 5, &expired), &basic),
            Err(ErrorKind::StaleContent),
            "expired 40 s before the request"
        );
        let fresh = format!("Expires: {}\r\n", date::format(T + 50));
        assert_eq!(
            judge_whole(&reply_head(200, 5, &fresh), &basic),
            Ok(Outcome::Hit)
        );
    }

    #[test]
    fn bodies_and_digests() {
        let basic = ask(RequestType::Basic);
        let ok = reply_head(200, 7, "");
        assert_eq!(
            judge_head(&ok, true, &ask(RequestType::Head)),
            Err(ErrorKind::UnwantedBody)
        );
        assert_eq!(judge_head(&ok, true, &basic), Ok(Outcome::Miss));
        // Announced lengths, before the body is read.
        let announcing = |n: u64| {
            let h = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n{ECHO_HEADER}: ");
            let mut h = h.into_bytes();
            write_hex16(&mut h, echo_of(basic.xact));
            h.extend_from_slice(b"\r\n\r\n");
            parse_response(&h, false, false).unwrap().unwrap()
        };
        assert_eq!(
            judge_head(&announcing(0), false, &basic),
            Err(ErrorKind::NoBody)
        );
        assert_eq!(
            judge_head(&announcing(99), false, &basic),
            Err(ErrorKind::LengthMismatch)
        );
        // The body as read.
        let with_body = |bytes: &[u8]| {
            let mut check = BodyCheck::new(SEED, 100);
            check.feed(bytes);
            let facts = Facts {
                head: &ok,
                extra: false,
                body: Some(&check),
                lm_now: &|| None,
                false_hit: &|_| false,
            };
            judge(&basic, &facts)
        };
        let mut bytes = Vec::new();
        bodies::append(&mut bytes, SEED, 0, 100);
        assert_eq!(with_body(&[]), Err(ErrorKind::NoBody));
        assert_eq!(with_body(&bytes[..60]), Err(ErrorKind::LengthMismatch));
        let mut flipped = bytes.clone();
        flipped[10] ^= 1;
        assert_eq!(with_body(&flipped), Err(ErrorKind::BodyMismatch));
        assert_eq!(with_body(&bytes), Ok(Outcome::Miss));
        let wrong_md5 = format!("Content-MD5: {}\r\n", bodies::content_md5(SEED + 1, 100));
        assert_eq!(
            judge_whole(&reply_head(200, 7, &wrong_md5), &ask(RequestType::Basic)),
            Err(ErrorKind::Md5Mismatch)
        );
        let right_md5 = format!("Content-MD5: {}\r\n", bodies::content_md5(SEED, 100));
        assert_eq!(
            judge_whole(&reply_head(200, 7, &right_md5), &ask(RequestType::Basic)),
            Ok(Outcome::Miss)
        );
    }
}
