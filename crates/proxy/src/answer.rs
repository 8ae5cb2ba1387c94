//! The decisions for one request: hit, revalidate, miss or collapse onto
//! a fetch under way ([`answer`]); the store's reads and writes (off the
//! runtime when they touch the disk); and the origin exchanges for misses
//! ([`forward`]) and stale copies ([`revalidate`]).

use crate::access_log::LogCode;
use crate::conn::{Done, Xact};
use crate::damage::misbehave;
use crate::fault::Fault;
use crate::framing::{end_to_end, error_reply, push_header};
use crate::hit::{serve_stored, Served};
use crate::inflight::{self, Join, Leader, Outcome};
use crate::relay::relay;
use crate::upstream::{exchange, origin_request, Conditional, FetchError};
use crate::Shared;
use bytes::Bytes;
use cacheoff_cache::{key_of, Directives, Freshness, Object};
use cacheoff_http::{date, Method, ResponseHead};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Answers one request.
pub(crate) async fn answer(s: &mut TcpStream, x: &Xact<'_>) -> Done {
    let Xact { req, t, sh, .. } = *x;
    sh.stats.requests.fetch_add(1, Ordering::Relaxed);
    if !sh.cfg.faults.is_empty() {
        if let Some(done) = misbehave(s, sh).await {
            return done;
        }
    }
    let cacheable_method = matches!(req.method, Method::Get | Method::Head);
    if !cacheable_method {
        // Unsafe methods invalidate what is stored for the URL (RFC 9111 §4.4).
        let safe = matches!(&req.method, Method::Other(m) if m == "OPTIONS" || m == "TRACE");
        if !safe && !sh.cfg.faults.strikes(Fault::KeepAfterPost) {
            remove(sh, &t.url).await;
        }
        return forward(s, x, None, LogCode::Miss).await;
    }
    if !sh.cfg.stores() {
        // Nothing is ever stored, so nothing is looked up or waited for.
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, None, LogCode::Miss).await;
    }
    let directives = Directives::parse(req.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
    let reload = (directives.no_cache || directives.max_age == Some(0))
        && !sh.cfg.faults.strikes(Fault::ReloadHit);
    let key = key_of(&t.url);
    if reload {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        let leader = if req.method == Method::Get {
            sh.inflight.lead(key)
        } else {
            None
        };
        return forward(s, x, leader, LogCode::ClientRefreshMiss).await;
    }
    if let Some(obj) = lookup(sh, &t.url).await {
        if sh.cfg.collector
            || obj.fresh.is_fresh(sh.cfg.clock.unix_now())
            || sh.cfg.faults.strikes(Fault::Stale)
        {
            sh.stats.hits.fetch_add(1, Ordering::Relaxed);
            return serve_stored(s, x, &obj, Served::Hit).await;
        }
        if req.method == Method::Get {
            if let Some(leader) = sh.inflight.lead(key) {
                return revalidate(s, x, obj, leader).await;
            }
        }
        // HEAD of a stale object, or a revalidation under way: ask the origin.
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, None, LogCode::Miss).await;
    }
    // A HEAD, or a range of an object not stored: the origin answers it
    // and nothing is stored (partial replies are never combined).
    let ranged = req
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("range"));
    if req.method == Method::Head || ranged {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, None, LogCode::Miss).await;
    }
    match sh.inflight.join(key) {
        Join::Lead(leader) => {
            sh.stats.misses.fetch_add(1, Ordering::Relaxed);
            forward(s, x, Some(leader), LogCode::Miss).await
        }
        Join::Wait(rx) => match inflight::wait(rx).await {
            Outcome::Stored(obj) => {
                sh.stats.hits.fetch_add(1, Ordering::Relaxed);
                sh.stats.collapsed.fetch_add(1, Ordering::Relaxed);
                serve_stored(s, x, &obj, Served::Hit).await
            }
            Outcome::NotStored => {
                sh.stats.misses.fetch_add(1, Ordering::Relaxed);
                forward(s, x, None, LogCode::Miss).await
            }
            Outcome::Failed(status) => {
                sh.stats.misses.fetch_add(1, Ordering::Relaxed);
                gateway_error(s, status, sh).await
            }
        },
    }
}

async fn lookup(sh: &Arc<Shared>, url: &str) -> Option<Arc<Object>> {
    if let Some(o) = sh.cache.get_memory(url) {
        return Some(o);
    }
    if !sh.cache.has_disk() {
        return None;
    }
    let (sh, url) = (sh.clone(), url.to_string());
    tokio::task::spawn_blocking(move || sh.cache.get_disk(&url))
        .await
        .ok()
        .flatten()
}

pub(crate) async fn remove(sh: &Arc<Shared>, url: &str) {
    if sh.cache.has_disk() {
        let (sh, url) = (sh.clone(), url.to_string());
        let _ = tokio::task::spawn_blocking(move || sh.cache.remove(&url)).await;
    } else {
        sh.cache.remove(url);
    }
}

pub(crate) fn store(sh: &Arc<Shared>, obj: Arc<Object>) {
    sh.cache.put_memory(obj.clone());
    if sh.cache.has_disk() {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || {
            if sh.cache.put_disk(&obj).is_err() {
                sh.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// A stale object: ask the origin whether it changed.
async fn revalidate(s: &mut TcpStream, x: &Xact<'_>, obj: Arc<Object>, leader: Leader) -> Done {
    let Xact {
        req, t, sh, pool, ..
    } = *x;
    sh.stats.stale.fetch_add(1, Ordering::Relaxed);
    // Validators are the stored Last-Modified (never Expires) and ETag.
    let etag = obj
        .headers()
        .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
        .map(|(_, v)| v);
    let since = obj.fresh.last_modified.map(|lm| date::format(lm as i64));
    if etag.is_none() && since.is_none() {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return forward(s, x, Some(leader), LogCode::RefreshModified).await;
    }
    let sent_at = sh.cfg.clock.unix_now();
    let request = origin_request(
        req,
        &t.authority,
        &t.path,
        Conditional::Validate {
            etag,
            since: since.as_deref(),
        },
        &[],
        sh.cfg.collector,
    );
    let reply = match exchange(pool, &sh.cfg, &t.authority, &request, false, true).await {
        Ok(r) => r,
        Err(e) => return origin_failed(s, e, Some(leader), sh).await,
    };
    if reply.head.status != 304 {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return relay(s, x, reply, Some(leader), LogCode::RefreshModified, sent_at).await;
    }
    sh.stats.revalidated.fetch_add(1, Ordering::Relaxed);
    let updated = Arc::new(refreshed(
        &obj,
        &reply.head,
        sent_at,
        sh.cfg.clock.unix_now(),
    ));
    reply.release(pool, &sh.cfg);
    store(sh, updated.clone());
    leader.finish(Some(updated.clone()));
    serve_stored(s, x, &updated, Served::Revalidated).await
}

/// The stored object as a `304` from the origin leaves it: the 304's
/// headers replace the stored ones of the same name, and its freshness
/// restarts from the 304's.
fn refreshed(obj: &Object, reply: &ResponseHead, sent_at: u64, now: u64) -> Object {
    let by = Freshness::of_reply(
        reply
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice())),
        sent_at,
        now,
    );
    let fresh_head = end_to_end(reply);
    let mut head = Vec::with_capacity(obj.head.len() + fresh_head.len());
    let replaced = |name: &str| {
        reply
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    for (name, value) in obj.headers() {
        if !replaced(name) {
            push_header(&mut head, name, value);
        }
    }
    head.extend_from_slice(&fresh_head);
    Object {
        url: obj.url.clone(),
        status: obj.status,
        head: Bytes::from(head),
        body: obj.body.clone(),
        fresh: obj.fresh.revalidated(&by),
        timing: obj.timing,
        vary: obj.vary.clone(),
    }
}

/// Sends the request to the origin and relays the reply.
pub(crate) async fn forward(
    s: &mut TcpStream,
    x: &Xact<'_>,
    leader: Option<Leader>,
    code: LogCode,
) -> Done {
    let Xact {
        req,
        t,
        body,
        sh,
        pool,
        ..
    } = *x;
    // A fetch that may fill the store asks for the whole object; the
    // client's own condition is then answered from it.
    let cond = if leader.is_some() {
        Conditional::Strip
    } else {
        Conditional::Keep
    };
    let sent_at = sh.cfg.clock.unix_now();
    let request = origin_request(req, &t.authority, &t.path, cond, body, sh.cfg.collector);
    let idempotent = matches!(req.method, Method::Get | Method::Head);
    match exchange(
        pool,
        &sh.cfg,
        &t.authority,
        &request,
        req.method == Method::Head,
        idempotent,
    )
    .await
    {
        Ok(reply) => relay(s, x, reply, leader, code, sent_at).await,
        Err(e) => origin_failed(s, e, leader, sh).await,
    }
}

/// The client learns that the origin failed, as a proxy's error status;
/// so do the requests waiting for this fetch.
async fn origin_failed(
    s: &mut TcpStream,
    e: FetchError,
    leader: Option<Leader>,
    sh: &Shared,
) -> Done {
    if let Some(l) = leader {
        l.fail(e.status());
    }
    gateway_error(s, e.status(), sh).await
}

async fn gateway_error(s: &mut TcpStream, status: u16, sh: &Shared) -> Done {
    sh.stats.origin_errors.fetch_add(1, Ordering::Relaxed);
    let out = error_reply(status);
    let _ = s.write_all(&out).await;
    Done::error(status, out.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_http::response::parse_response;

    #[test]
    fn a_304_refreshes_the_stored_headers_and_lifetime_and_keeps_the_body() {
        let t0 = 1_800_000_000;
        let stored = Object {
            url: "http://o/x".into(),
            status: 200,
            head: Bytes::from_static(
                b"Date: x\r\nCache-Control: max-age=10\r\nX-Cacheoff-Echo: 0000000000000001\r\nContent-Type: text/plain\r\n",
            ),
            body: Bytes::from_static(b"body"),
            fresh: Freshness::of_reply([("Cache-Control", b"max-age=10".as_slice())], t0, t0),
            timing: None,
            vary: None,
        };
        let raw = format!(
            "HTTP/1.1 304 Not Modified\r\nDate: {}\r\nCache-Control: max-age=60\r\nX-Cacheoff-Echo: 0000000000000002\r\nConnection: keep-alive\r\n\r\n",
            date::format(t0 as i64 + 100)
        );
        let reply = parse_response(raw.as_bytes(), false, true)
            .unwrap()
            .unwrap();
        let o = refreshed(&stored, &reply, t0 + 100, t0 + 100);
        let head = String::from_utf8(o.head.to_vec()).unwrap();
        assert_eq!(
            head,
            format!(
                "Content-Type: text/plain\r\nDate: {}\r\nCache-Control: max-age=60\r\nX-Cacheoff-Echo: 0000000000000002\r\n",
                date::format(t0 as i64 + 100)
            )
        );
        assert_eq!(o.body, stored.body);
        assert!(o.fresh.is_fresh(t0 + 150));
        assert!(!o.fresh.is_fresh(t0 + 161));
    }
}
