//! Serving a stored object: a hit, a revalidated copy, or the object a
//! conditional miss just fetched. Head and body go out in one buffer and
//! one write (the hit path's cost), except for the Collector, which
//! replays the recorded miss timing, and for the faults that damage hits.

use crate::config::Role;
use crate::damage::{deliver, on_hit, Damage, Delivery};
use crate::decision::{Carried, Decision};
use crate::fault::Fault;
use crate::framing::{end_head, give_scratch, push_collected_stamp, take_scratch, BodyFraming};
use crate::lines::{content_type_of, push_status_line, push_u64, without_header};
use crate::range::{self, Ranged};
use crate::replay;
use crate::send::send_reply;
use crate::xact::{request_fields, Done, Xact};
use cacheoff_cache::{validators, Object, Timing};
use cacheoff_http::echo::{COLLECTED_HEADER, ECHO_HEADER};
use cacheoff_http::{Framing, Method, RequestHead};
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use tokio::net::TcpStream;

/// Decides whether the client's condition gets a 304 (RFC 9111 §4.3.2):
/// its `If-None-Match` against the stored `ETag` (weak comparison), else
/// its `If-Modified-Since` against the stored `Last-Modified` (never
/// `Expires`, unless the ims-by-expires fault says the fresh copy will do).
fn not_modified(req: &RequestHead, obj: &Object, by_expires: bool) -> bool {
    // Most hits are unconditional: they cost no look at the stored ETag.
    let conditional = || {
        req.ims.is_some()
            || req
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("if-none-match"))
    };
    obj.status == 200
        && (by_expires
            || conditional()
                && validators::not_modified(
                    request_fields(req),
                    obj.status,
                    validators::etag_of(obj.headers()).as_ref(),
                    obj.fresh.last_modified,
                ))
}

/// How late the `slow-hit` fault answers a hit.
const SLOW_HIT: std::time::Duration = std::time::Duration::from_millis(1);

/// Writes a stored object: 304 if the client's `If-Modified-Since` is not
/// older than its `Last-Modified`, else the whole reply (head only for
/// HEAD). The Collector replays the recorded origin timing on hits.
/// `how`: what the proxy decided (a hit, a collapsed or revalidated
/// request, a stale copy served, or the miss whose fetched object answers
/// the client's condition); `kept`: `obj` is in the store (a miss's may
/// not be).
pub(crate) async fn serve_stored(
    s: &mut TcpStream,
    x: &Xact<'_>,
    obj: &Object,
    how: Decision,
    kept: bool,
) -> Done {
    let Xact { req, t0, sh, .. } = *x;
    let (cfg, faults) = (&sh.cfg, &sh.cfg.faults);
    if how.stored_copy() && faults.strikes(Fault::SlowHit) {
        let asleep = std::time::Instant::now();
        let due = asleep + SLOW_HIT;
        match cacheoff_timer::PreciseTimer::new() {
            Ok(mut t) => drop(t.sleep_until(due).await),
            Err(_) => tokio::time::sleep_until(due.into()).await,
        }
        let st = &sh.stats;
        st.slowed_hits.fetch_add(1, Ordering::Relaxed);
        let late = asleep.elapsed().as_micros() as u64;
        st.slowed_hits_us.fetch_add(late, Ordering::Relaxed);
    }
    let by_expires = req.ims.is_some()
        && obj.fresh.is_fresh(cfg.clock.unix_now())
        && faults.strikes(Fault::ImsByExpires);
    let ignore_ims = how.stored_copy() && req.ims.is_some() && faults.strikes(Fault::IgnoreIms);
    let not_modified = !ignore_ims && not_modified(req, obj, by_expires);
    let ranged = if !not_modified && req.method == Method::Get {
        range::decide(req, obj)
    } else {
        Ranged::Whole
    };
    let (status, selected, range_head): (u16, Cow<'_, [u8]>, String) = match &ranged {
        _ if not_modified => (304, Cow::Borrowed(&[]), String::new()),
        Ranged::Whole => (obj.status, Cow::Borrowed(&obj.body), String::new()),
        Ranged::Unsatisfiable => (
            416,
            Cow::Borrowed(&[]),
            format!("Content-Range: bytes */{}\r\n", obj.body.len()),
        ),
        Ranged::Parts(parts) => match parts[..] {
            [(a, b)] => (
                206,
                Cow::Borrowed(&obj.body[a as usize..=b as usize]),
                format!("Content-Range: bytes {a}-{b}/{}\r\n", obj.body.len()),
            ),
            _ => (
                206,
                Cow::Owned(range::multipart(
                    &obj.body,
                    parts,
                    &content_type_of(obj.headers()),
                )),
                format!(
                    "Content-Type: multipart/byteranges; boundary={}\r\n",
                    range::BOUNDARY
                ),
            ),
        },
    };
    let with_body = status != 304 && req.method != Method::Head;
    let collector = cfg.role == Role::Collector;
    let paced = match (collector && how.stored_copy(), obj.timing) {
        (true, Some(timing)) => Some(timing),
        _ => None,
    };
    let damage = if paced.is_none() && how.stored_copy() && with_body && !faults.is_empty() {
        on_hit(faults, &selected)
    } else {
        Damage {
            body: Cow::Borrowed(if with_body { &selected } else { &[] }),
            extra_header: None,
            delivery: Delivery::Whole,
        }
    };
    let body = &damage.body;
    let framing = if with_body {
        BodyFraming::choose(
            cfg.reply_framing,
            Framing::Length(body.len() as u64),
            req.minor,
        )
    } else {
        BodyFraming::None
    };
    let keep_alive = framing.keeps_alive(cfg.reply_framing, req.keep_alive);

    let mut out = take_scratch(obj.head.len() + 256);
    push_status_line(&mut out, status);
    if faults.strikes(Fault::StripEcho) {
        out.extend_from_slice(&without_header(&obj.head, ECHO_HEADER));
    } else if status == 416 {
        // The error says nothing of the stored representation.
    } else if matches!(&ranged, Ranged::Parts(p) if p.len() > 1) {
        // Several ranges have their own Content-Type.
        out.extend_from_slice(&without_header(&obj.head, "content-type"));
    } else if collector {
        // The stored name of the request it was kept for is not the reply's.
        out.extend_from_slice(&without_header(&obj.head, COLLECTED_HEADER));
    } else {
        out.extend_from_slice(&obj.head);
    }
    out.extend_from_slice(range_head.as_bytes());
    if !matches!(how, Decision::Miss(_)) {
        out.extend_from_slice(b"Age: ");
        push_u64(&mut out, obj.fresh.age_header(cfg.clock.unix_now()));
        out.extend_from_slice(b"\r\n");
    }
    if req.method == Method::Head && !not_modified {
        // A HEAD reply states the length its GET would have.
        out.extend_from_slice(b"Content-Length: ");
        push_u64(&mut out, obj.body.len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(h) = damage.extra_header {
        out.extend_from_slice(h);
    }
    push_collected_stamp(&mut out, req, cfg);
    let served = how.cache_status(Some(Carried {
        status: obj.status,
        fresh: &obj.fresh,
        stored: kept,
        now: cfg.clock.unix_now(),
    }));
    end_head(&mut out, framing, &served, keep_alive, cfg);
    let head_len = out.len();

    // The bytes meant for the client, as the access log counts them.
    let (sent, bytes) = if let Some(timing) = paced {
        // A 304 costs what an origin exchange without a body would.
        let timing = if with_body {
            timing
        } else {
            Timing {
                transfer: std::time::Duration::ZERO,
                ..timing
            }
        };
        let mut framed = Vec::new();
        let framed: &[u8] = if framing == BodyFraming::Chunked {
            framing.encode(&mut framed, body);
            &framed
        } else {
            body
        };
        let sent = replay::paced(s, &out, framed, timing, t0, cfg.client_write_timeout).await;
        if sent.is_ok() && with_body {
            sh.replay.record(obj.key(), timing.served, t0.elapsed());
        }
        (sent, head_len + framed.len())
    } else if faults.is_empty() {
        let (written, sent) =
            send_reply(s, &mut out, body, framing, cfg.client_write_timeout).await;
        give_scratch(out);
        (sent, written as usize)
    } else {
        framing.encode(&mut out, body);
        let len = out.len();
        if how.stored_copy() && !with_body && faults.strikes(Fault::BodilessBody) {
            out.extend_from_slice(&obj.body);
        }
        let sent = deliver(s, &out, head_len, damage.delivery, cfg.client_idle_timeout).await;
        (sent, len)
    };
    Done {
        decision: how,
        not_modified,
        status,
        bytes: bytes as u64,
        peer: None,
        content_type: if sh.log.is_some() {
            content_type_of(obj.headers())
        } else {
            String::new()
        },
        keep_alive: sent.is_ok() && keep_alive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use cacheoff_cache::Freshness;
    use cacheoff_http::request::parse_request;

    fn object(status: u16, lm: Option<u64>) -> Object {
        let mut fresh =
            Freshness::of_reply([("Cache-Control", b"max-age=60".as_slice())], 1000, 1000);
        fresh.last_modified = lm;
        Object {
            url: "http://o/x".into(),
            status,
            head: Bytes::new(),
            body: Bytes::from_static(b"body"),
            fresh,
            timing: None,
            vary: None,
        }
    }

    fn get(ims: Option<&str>) -> RequestHead {
        let ims = ims.map_or(String::new(), |d| format!("If-Modified-Since: {d}\r\n"));
        parse_request(
            format!("GET http://o/x HTTP/1.1\r\n{ims}\r\n").as_bytes(),
            true,
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn only_last_modified_decides_a_304() {
        let at = |t: i64| cacheoff_http::date::format(t);
        let obj = object(200, Some(500));
        assert!(not_modified(&get(Some(&at(500))), &obj, false));
        assert!(!not_modified(&get(Some(&at(499))), &obj, false));
        assert!(!not_modified(&get(None), &obj, false));
        // No Last-Modified: always the whole reply, unless the fault says so.
        assert!(!not_modified(
            &get(Some(&at(2000))),
            &object(200, None),
            false
        ));
        assert!(not_modified(
            &get(Some(&at(2000))),
            &object(200, None),
            true
        ));
        // Only a 200 has a 304.
        assert!(!not_modified(
            &get(Some(&at(500))),
            &object(404, Some(500)),
            false
        ));
    }
}
