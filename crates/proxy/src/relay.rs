//! A reply from the origin on its way to the client and the store.
//! [`relay`] runs the steps: [`Plan::new`] decides everything the reply
//! head allows (store it? how fresh? answer the client's condition
//! ourselves? how to frame it?), `pump` moves the body (from the origin
//! at its pace, to the client at the client's), and [`file`] stores the
//! result and wakes the requests waiting for it.

use crate::cache_status::CacheStatus;
use crate::config::{ProxyConfig, Role};
use crate::decision::{Carried, Decision, Miss};
use crate::fault::Fault;
use crate::framing::{copy_name, end_head, end_to_end, push_collected_stamp, BodyFraming};
use crate::hit::serve_stored;
use crate::inflight::Leader;
use crate::lines::{content_type_of, push_header, without_header};
use crate::pump::{self, Body, ClientSide, Cut};
use crate::store::{head_update, remove, store};
use crate::upstream::{OriginReply, Pool};
use crate::xact::{request_fields, Done, Xact};
use crate::Shared;
use bytes::Bytes;
use cacheoff_cache::storage::strip_fields;
use cacheoff_cache::validators::{etag_of, last_modified_of, not_modified};
use cacheoff_cache::{storable_with, Freshness, Object, Storage, Timing};
use cacheoff_http::echo::{COLLECTED_HEADER, ECHO_HEADER};
use cacheoff_http::status::write_status_line;
use cacheoff_http::{Method, RequestHead, ResponseHead};
use std::sync::Arc;
use tokio::net::TcpStream;

/// Relays an origin reply to the client, storing it when allowed.
/// `leader` is set when this fetch may fill the store (others may be
/// waiting for it); `why` the request went to the origin; `sent_at` is
/// when the request left, for freshness.
pub(crate) async fn relay(
    s: &mut TcpStream,
    x: &Xact<'_>,
    mut reply: OriginReply,
    mut leader: Option<Leader>,
    why: Miss,
    sent_at: u64,
) -> Done {
    let Xact { req, t, t0, sh, .. } = *x;
    let mut plan = Plan::new(req, &reply.head, leader.is_some(), &sh.cfg, sent_at, why);
    if !matches!(req.method, Method::Get | Method::Head) && (200..400).contains(&plan.status) {
        // The store's keys name the request's authority (a surrogate's
        // `Host`), not necessarily the origin's address.
        let key_authority = t
            .url
            .strip_prefix("http://")
            .and_then(|r| r.split(['/', '?']).next())
            .unwrap_or(&t.authority);
        for url in invalidated(&reply.head, key_authority) {
            remove(sh, &url).await;
        }
    }
    if req.method == Method::Head && plan.status == 200 && sh.cfg.stores() {
        head_update(sh, req, &t.url, &reply.head, sent_at).await;
    }
    if let Some(l) = &leader {
        l.progress(reply.head.head_len as u64);
    }
    if !plan.may_store {
        // Waiters go to the origin themselves now, not once this client
        // has read the reply.
        if let Some(l) = leader.take() {
            l.finish(None);
        }
    }
    let streaming = plan.client_head.is_some();
    let mut client = ClientSide::new(sh.cfg.client_write_timeout, streaming, plan.framing);
    // Interim replies go on to HTTP/1.1 clients (RFC 9110 §15.2), never
    // to the store; one the proxy answers itself (a 304) needs none.
    if req.minor >= 1 && streaming {
        for h in std::mem::take(&mut reply.interim) {
            client.stage(&interim_head(&h));
        }
    }
    if let Some(head) = &plan.client_head {
        client.stage(head);
    }
    let length = crate::upstream::length_of(&reply.head);
    let mut body = Body::new(plan.may_store, sh.cfg.max_object, length);
    let fetched = pump::fetch(s, &mut reply, &mut body, &mut client, &mut leader).await;
    let mut done = Done {
        decision: Decision::Miss(why),
        not_modified: false,
        status: plan.status,
        bytes: client.written,
        peer: reply.peer,
        content_type: std::mem::take(&mut plan.content_type),
        keep_alive: false,
    };
    if let Err(cut) = fetched {
        if cut == Cut::Origin {
            // The client sees a cut-off reply, as from the origin; the
            // waiters, an abandoned fetch (one of them takes over).
            sh.stats.count_cut();
        }
        return done;
    }
    let (whole, rest) = body.finish(client.framed());
    let object = whole.map(|body| {
        let timing = Timing {
            first_byte: reply.first_byte.saturating_duration_since(t0),
            transfer: reply.last_byte.saturating_duration_since(reply.first_byte),
            served: t0.elapsed(),
        };
        Arc::new(plan.object(req, &t.url, body, Some(timing)))
    });
    // Filed as the last byte arrives, before the client has it (so a
    // client that got the reply whole finds the object stored), however
    // far behind the client is.
    file(sh, x.pool, reply, leader, object.clone());
    client.finish(s, &rest).await;
    done.bytes = client.written;
    done.keep_alive = plan.keep_alive && !client.failed;
    if plan.client_304 {
        // Built from the fetched reply, stored or not. The condition was
        // met: logged as the miss it was, whatever `serve_stored` makes
        // of the stored copy's validators.
        let o = object.unwrap_or_else(|| Arc::new(plan.object(req, &t.url, Bytes::new(), None)));
        let how = Decision::Miss(why);
        return Done {
            not_modified: true,
            ..serve_stored(s, x, &o, how, plan.may_store).await
        };
    }
    done
}

/// What [`relay`] decided from the request and the reply head, before
/// any body byte arrived.
#[derive(Debug)]
struct Plan {
    status: u16,
    /// The end-to-end headers, as stored.
    e2e: Bytes,
    content_type: String,
    /// The body may fill the store.
    may_store: bool,
    fresh: Freshness,
    /// The client asked conditionally but the fetch was for the whole
    /// object: answer the condition from it instead of streaming it.
    client_304: bool,
    /// The head the client gets, when the reply is streamed to it.
    client_head: Option<Vec<u8>>,
    framing: BodyFraming,
    keep_alive: bool,
}

impl Plan {
    /// `leads`: this fetch may fill the store (it asked for the whole
    /// object); `why` the request was forwarded. Draws the faults that
    /// change these decisions.
    fn new(
        req: &RequestHead,
        head: &ResponseHead,
        leads: bool,
        cfg: &ProxyConfig,
        sent_at: u64,
        why: Miss,
    ) -> Plan {
        let status = head.status;
        // The Collector stores everything; so does a proxy with this fault,
        // which also keeps the copy fresh for an hour.
        let collector = cfg.role == Role::Collector;
        let store_anyway =
            status == 200 && (collector || cfg.faults.strikes(Fault::CacheUncachable));
        let storage = may_store(req, head, cfg, store_anyway);
        let may_store = leads && storage.is_some();
        // The Collector keeps a reply no cache may reuse for the copies of
        // the one client request that fetched it (SPE): it names that
        // request in the stored head.
        let collected_for = (collector && may_store_normally(req, head, cfg).is_none())
            .then(|| copy_name(req))
            .flatten();
        let mut fresh = Freshness::of_response(
            status,
            pairs(head),
            sent_at,
            cfg.clock.unix_now(),
            &cfg.targeted,
        );
        if store_anyway && !collector {
            fresh.no_cache = false;
            fresh.max_age = Some(3600);
        }
        let client_304 = leads && answers_condition(req, head);
        let served = Decision::Miss(why).cache_status(Some(Carried {
            status,
            fresh: &fresh,
            stored: may_store,
            now: cfg.clock.unix_now(),
        }));
        let all = end_to_end(head);
        // Targeted fields are for this cache alone (RFC 9213): read above,
        // then neither passed on nor stored, so a hit need not look for them.
        let targeted = cfg.targeted.strip_downstream(pairs(head));
        let downstream = strip_fields(&all, &targeted);
        // Nor what the store must not keep (Set-Cookie, private="f", ...).
        let mut unkept = storage.unwrap_or_default();
        unkept.extend(targeted);
        let mut kept = strip_fields(&all, &unkept);
        if let Some(name) = collected_for {
            push_header(&mut kept, COLLECTED_HEADER, name);
        }
        let e2e = Bytes::from(kept);
        let framing = BodyFraming::choose(cfg.reply_framing, head.framing, req.minor);
        let keep_alive = framing.keeps_alive(cfg.reply_framing, req.keep_alive);
        let client_head = (!client_304).then(|| {
            let mut e2e = if cfg.faults.strikes(Fault::StripEcho) {
                without_header(&downstream, ECHO_HEADER)
            } else {
                downstream
            };
            // A reply that arrived already old says how old it is now
            // (RFC 9111 §5.1): the origin's Age plus its time in transit.
            if pairs(head).any(|(n, _)| n.eq_ignore_ascii_case("age")) {
                let age = fresh.current_age(cfg.clock.unix_now());
                e2e.extend_from_slice(format!("Age: {age}\r\n").as_bytes());
            }
            client_head(req, head, &e2e, framing, keep_alive, &served, cfg)
        });
        Plan {
            status,
            content_type: content_type_of(pairs(head)),
            e2e,
            may_store,
            fresh,
            client_304,
            client_head,
            framing,
            keep_alive,
        }
    }

    /// The stored object the reply to `req` makes, with `body`, keyed by
    /// the request fields its `Vary` nominates.
    fn object(&self, req: &RequestHead, url: &str, body: Bytes, timing: Option<Timing>) -> Object {
        Object {
            url: url.to_string(),
            status: self.status,
            head: self.e2e.clone(),
            body,
            fresh: self.fresh,
            timing,
            vary: None,
        }
        .keyed_by(request_fields(req))
    }
}

/// The stored URLs a successful unsafe request also invalidates (RFC 9111
/// §4.4): its reply's `Location` and `Content-Location`, when they are on
/// the same origin (the target itself went before the request).
fn invalidated(head: &ResponseHead, authority: &str) -> Vec<String> {
    pairs(head)
        .filter(|(n, _)| {
            n.eq_ignore_ascii_case("location") || n.eq_ignore_ascii_case("content-location")
        })
        .filter_map(|(_, v)| {
            let v = std::str::from_utf8(v).ok()?.trim();
            let path = match v.get(..7) {
                Some(scheme) if scheme.eq_ignore_ascii_case("http://") => {
                    let rest = &v[7..];
                    let end = rest.find(['/', '?']).unwrap_or(rest.len());
                    if !rest[..end].eq_ignore_ascii_case(authority) {
                        return None;
                    }
                    match &rest[end..] {
                        "" => "/".to_string(),
                        p if p.starts_with('?') => format!("/{p}"),
                        p => p.to_string(),
                    }
                }
                _ if v.starts_with('/') && !v.starts_with("//") => v.to_string(),
                _ => return None,
            };
            Some(format!("http://{authority}{path}"))
        })
        .collect()
}

/// An interim reply as the client gets it: its status and end-to-end
/// fields (103 Early Hints' `Link`s).
fn interim_head(head: &ResponseHead) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.head_len);
    write_status_line(&mut out, head.status);
    out.extend_from_slice(&end_to_end(head));
    out.extend_from_slice(b"\r\n");
    out
}

fn pairs(head: &ResponseHead) -> impl Iterator<Item = (&str, &[u8])> + Clone {
    head.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
}

/// Decides whether a reply may fill the store (RFC 9111 §3, RFC 9213), and
/// the fields the stored copy must drop; any 200 when `store_anyway`;
/// never a body announced larger than `max_object` (one that grows past it
/// is dropped while it arrives).
/// Whether a cache that stores only what it may reuse would store it.
fn may_store_normally(
    req: &RequestHead,
    head: &ResponseHead,
    cfg: &ProxyConfig,
) -> Option<Vec<String>> {
    may_store(req, head, cfg, false)
}

fn may_store(
    req: &RequestHead,
    head: &ResponseHead,
    cfg: &ProxyConfig,
    store_anyway: bool,
) -> Option<Vec<String>> {
    let fits = crate::upstream::length_of(head).is_none_or(|n| n <= cfg.max_object);
    // The body of a request is not part of the key: what a GET with one
    // got is not what the next GET gets.
    let with_body = req.chunked || req.content_length.is_some_and(|n| n > 0);
    // Partial content is never stored (nor combined into a whole), nor a
    // reply whose framing was ambiguous.
    if !fits || head.status == 206 || with_body || head.conflicting_length {
        return None;
    }
    if store_anyway {
        return Some(Vec::new());
    }
    match storable_with(
        head.status,
        request_fields(req),
        pairs(head),
        with_body,
        &cfg.targeted,
    ) {
        Storage::Store { strip } => Some(strip),
        Storage::Refuse(_) => None,
    }
}

/// Decides whether the client's condition is met by a fetched reply
/// (`If-None-Match` by weak comparison, else `If-Modified-Since`), so the
/// client gets a 304.
fn answers_condition(req: &RequestHead, head: &ResponseHead) -> bool {
    not_modified(
        request_fields(req),
        head.status,
        etag_of(pairs(head)).as_ref(),
        last_modified_of(pairs(head)),
    )
}

/// The head the client gets for a relayed reply: the origin's status and
/// end-to-end headers `e2e` (its `Age` among them), then the proxy's
/// framing for it and how it `served` it.
fn client_head(
    req: &RequestHead,
    head: &ResponseHead,
    e2e: &[u8],
    framing: BodyFraming,
    keep_alive: bool,
    served: &CacheStatus,
    cfg: &ProxyConfig,
) -> Vec<u8> {
    // Room for the lines the proxy adds (Cache-Status up to ~80 bytes).
    let mut out = Vec::with_capacity(e2e.len() + 256);
    write_status_line(&mut out, head.status);
    out.extend_from_slice(e2e);
    if req.method == Method::Head {
        // A HEAD reply states the length its GET would have.
        if let Some((_, v)) = pairs(head).find(|(n, _)| n.eq_ignore_ascii_case("content-length")) {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
    }
    push_collected_stamp(&mut out, req, cfg);
    end_head(&mut out, framing, served, keep_alive, cfg);
    out
}

/// Files a finished fetch: its origin connection back to the pool, the
/// object into the store, and the outcome to the requests waiting for it.
fn file(
    sh: &Arc<Shared>,
    pool: &Pool,
    reply: OriginReply,
    leader: Option<Leader>,
    object: Option<Arc<Object>>,
) {
    reply.release(pool, &sh.cfg);
    if let Some(o) = &object {
        store(sh, o.clone());
    }
    if let Some(l) = leader {
        l.finish(object);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReplyFraming;
    use cacheoff_http::request::parse_request;
    use cacheoff_http::response::parse_response;

    fn req(extra: &str) -> RequestHead {
        let raw = format!("GET http://o/x HTTP/1.1\r\nHost: o\r\n{extra}\r\n");
        parse_request(raw.as_bytes(), true).unwrap().unwrap()
    }

    fn reply(status: u16, extra: &str) -> ResponseHead {
        let raw = format!(
            "HTTP/1.1 {status} X\r\nDate: Sun, 22 Nov 2026 00:00:00 GMT\r\nLast-Modified: Sat, 22 Nov 2025 00:00:00 GMT\r\n{extra}Content-Length: 5\r\nConnection: keep-alive\r\nX-Cacheoff-Echo: 0000000000000001\r\n\r\n"
        );
        parse_response(raw.as_bytes(), false, true)
            .unwrap()
            .unwrap()
    }

    fn cfg() -> ProxyConfig {
        ProxyConfig::new("127.0.0.1:0".parse().unwrap())
    }

    #[test]
    fn the_store_takes_what_rfc_9111_allows_and_fits() {
        let (mut big, mut small) = (cfg(), cfg());
        big.max_object = 100;
        small.max_object = 4;
        let store = |req: &RequestHead, head: &ResponseHead, anyway| {
            may_store(req, head, &big, anyway).is_some()
        };
        let public = reply(200, "Cache-Control: public\r\n");
        assert!(store(&req(""), &public, false));
        assert!(
            may_store(&req(""), &public, &small, false).is_none(),
            "larger than max_object"
        );
        assert!(!store(&req("Cache-Control: no-store\r\n"), &public, false));
        assert!(!store(&req("Authorization: x\r\n"), &reply(200, ""), false));
        let private = reply(200, "Cache-Control: private\r\n");
        assert!(!store(&req(""), &private, false));
        assert!(store(&req(""), &private, true));
        // A cookie is stored only with an explicitly shared reply, and
        // then without the cookie.
        assert!(!store(&req(""), &reply(200, "Set-Cookie: a=1\r\n"), false));
        let shared = reply(
            200,
            "Set-Cookie: a=1\r\nCache-Control: public, max-age=60\r\n",
        );
        let strip = may_store(&req(""), &shared, &big, false).unwrap();
        assert!(strip.iter().any(|f| f.eq_ignore_ascii_case("set-cookie")));
    }

    #[test]
    fn a_fetch_for_the_store_answers_the_clients_condition() {
        let since = |d: &str| req(&format!("If-Modified-Since: {d}\r\n"));
        let r = reply(200, "");
        assert!(answers_condition(
            &since("Sat, 22 Nov 2025 00:00:00 GMT"),
            &r
        ));
        assert!(!answers_condition(
            &since("Fri, 21 Nov 2025 23:59:59 GMT"),
            &r
        ));
        assert!(!answers_condition(&req(""), &r));
        assert!(!answers_condition(
            &since("Sat, 22 Nov 2025 00:00:00 GMT"),
            &reply(404, "")
        ));
        // Only a fetch that dropped the condition answers it itself.
        let c = cfg();
        let p = Plan::new(
            &since("Sat, 22 Nov 2025 00:00:00 GMT"),
            &r,
            false,
            &c,
            0,
            Miss::Uri,
        );
        assert!(!p.client_304 && p.client_head.is_some());
        let p = Plan::new(
            &since("Sat, 22 Nov 2025 00:00:00 GMT"),
            &r,
            true,
            &c,
            0,
            Miss::Uri,
        );
        assert!(p.client_304 && p.client_head.is_none());
    }

    #[test]
    fn the_client_head_carries_the_origins_headers_and_the_proxys_framing() {
        let mut c = cfg();
        let r = reply(200, "Cache-Control: public\r\n");
        let p = Plan::new(&req(""), &r, true, &c, 0, Miss::Uri);
        assert!(p.may_store && p.keep_alive);
        let head = String::from_utf8(p.client_head.unwrap()).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\nDate: "), "{head}");
        assert!(head.contains("X-Cacheoff-Echo: 0000000000000001\r\n"));
        let (framed, end) = head.split_once("Cache-Status: ").unwrap();
        assert!(framed.ends_with("Content-Length: 5\r\n"), "{head}");
        let (member, end) = end.split_once("\r\n").unwrap();
        assert!(
            member.starts_with("cacheoff; fwd=uri-miss; fwd-status=200; ttl=")
                && member.ends_with("; stored"),
            "{member}"
        );
        assert_eq!(end, "X-Cache: MISS\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(head.matches("Connection").count(), 1, "{head}");

        c.reply_framing = ReplyFraming::Chunked;
        c.faults = crate::Faults::new(vec![(Fault::StripEcho, 1.0)]);
        let p = Plan::new(&req(""), &r, true, &c, 0, Miss::Uri);
        let head = String::from_utf8(p.client_head.unwrap()).unwrap();
        assert!(head.contains("Transfer-Encoding: chunked\r\nCache-Status: cacheoff; fwd=uri-miss"));
        assert!(head.ends_with("\r\nX-Cache: MISS\r\nConnection: keep-alive\r\n\r\n"));
        assert!(!head.contains("X-Cacheoff-Echo"), "{head}");
        // What is stored keeps the echo: the fault is on the wire only.
        assert!(p.e2e.windows(15).any(|w| w == b"X-Cacheoff-Echo"));
    }

    #[test]
    fn a_head_reply_states_the_gets_length() {
        let raw = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
        let r = parse_response(raw.as_bytes(), true, true).unwrap().unwrap();
        let head_req = parse_request(b"HEAD http://o/x HTTP/1.1\r\n\r\n", true)
            .unwrap()
            .unwrap();
        let c = cfg();
        let p = Plan::new(&head_req, &r, false, &c, 0, Miss::Uri);
        assert_eq!(p.framing, BodyFraming::None);
        let head = String::from_utf8(p.client_head.unwrap()).unwrap();
        assert!(head.contains("\r\nContent-Length: 1234\r\n"), "{head}");
    }

    #[test]
    fn the_cache_uncachable_fault_stores_for_an_hour() {
        let mut c = cfg();
        c.faults = crate::Faults::new(vec![(Fault::CacheUncachable, 1.0)]);
        let r = reply(200, "Cache-Control: private, no-cache\r\n");
        let p = Plan::new(&req(""), &r, true, &c, 0, Miss::Uri);
        assert!(p.may_store);
        assert_eq!((p.fresh.no_cache, p.fresh.max_age), (false, Some(3600)));
        assert!(!Plan::new(&req(""), &r, true, &cfg(), 0, Miss::Uri).may_store);
    }
}
