//! The decisions for one request: hit, revalidate, miss or collapse onto
//! a fetch under way ([`answer`]); the store's reads and writes (off the
//! runtime when they touch the disk); and the origin exchanges for misses
//! ([`forward`]) and stale copies ([`revalidate`]).

use crate::access_log::LogCode;
use crate::cache_status::{fwd_for, CacheStatus, Fwd};
use crate::conn::{Done, Xact};
use crate::damage::misbehave;
use crate::fault::Fault;
use crate::framing::{collected_for, copy_name, error_reply};
use crate::hit::{serve_stored, Served};
use crate::inflight::{Join, Leader, Outcome};
use crate::relay::relay;
use crate::upstream::{exchange, origin_request, Conditional, FetchError};
use crate::Shared;
use cacheoff_cache::storage::strip_fields;
use cacheoff_cache::update::head_updates;
use cacheoff_cache::validators::Conditional as StoredValidators;
use cacheoff_cache::{key_of, on_origin_error, reuse, Directives, Object, OnError, Reuse};
use cacheoff_http::{Method, RequestHead, ResponseHead};
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
    let reload_asked = directives.no_cache || directives.max_age == Some(0);
    let reload = reload_asked && !sh.cfg.faults.strikes(Fault::ReloadHit);
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
    // The Collector serves a reply no cache may reuse only to the copies
    // of the client request that fetched it.
    let found = lookup(sh, key, &t.url, req)
        .await
        .filter(|obj| collector_serves(sh, obj, req));
    if let Some(obj) = found {
        let now = sh.cfg.clock.unix_now();
        // A reload that got this far is the reload-hit fault: served as is.
        let reuse = if sh.cfg.collector || reload_asked || sh.cfg.faults.strikes(Fault::Stale) {
            Reuse::Fresh
        } else {
            reuse(&directives, &obj.fresh, now)
        };
        match reuse {
            Reuse::Fresh | Reuse::Stale => {
                sh.stats.hits.fetch_add(1, Ordering::Relaxed);
                return serve_stored(s, x, &obj, Served::Hit).await;
            }
            Reuse::GatewayTimeout => {
                return gateway_error(s, 504, CacheStatus::detail("only-if-cached"), sh).await
            }
            // Served stale now only if the origin is asked meanwhile.
            Reuse::StaleWhileRevalidate if req.method == Method::Get => {
                if let Some(leader) = sh.inflight.lead(key) {
                    background_revalidation(x, obj.clone(), leader);
                }
                sh.stats.hits.fetch_add(1, Ordering::Relaxed);
                return serve_stored(s, x, &obj, Served::Hit).await;
            }
            Reuse::StaleWhileRevalidate | Reuse::Validate => {}
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
    if directives.only_if_cached {
        // RFC 9111 §5.2.1.7: nothing stored answers it.
        return gateway_error(s, 504, CacheStatus::detail("only-if-cached"), sh).await;
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
    let mut joined = sh.inflight.join(key);
    // Set once this request gave up on a late fetch.
    let mut took_over = false;
    loop {
        let mut waiter = match joined {
            Join::Lead(leader) => {
                // A fetch that ended between the lookup and the join stored
                // its object before it left: found now, it is not fetched
                // twice.
                let stored = sh.cache.get_memory_keyed(key, &t.url, request_fields(req));
                if let Some(obj) = stored.filter(|o| answers(sh, o, req, &directives)) {
                    leader.finish(Some(obj.clone()));
                    sh.stats.hits.fetch_add(1, Ordering::Relaxed);
                    return serve_stored(s, x, &obj, Served::Hit).await;
                }
                sh.stats.misses.fetch_add(1, Ordering::Relaxed);
                if took_over {
                    sh.stats.collapse_takeovers.fetch_add(1, Ordering::Relaxed);
                }
                return forward(s, x, Some(leader), LogCode::Miss).await;
            }
            Join::Wait(w) => w,
        };
        let (wait, min_rate) = (sh.cfg.collapse_wait, sh.cfg.collapse_min_rate);
        let outcome = match waiter.wait(wait, min_rate).await {
            // Late, or cut off: one waiter leads a new fetch, the others
            // wait for it.
            None | Some(Outcome::Abandoned) => {
                joined = sh.inflight.take_over(key, &waiter);
                took_over = true;
                continue;
            }
            Some(o) => o,
        };
        return collapsed(s, x, outcome, &directives).await;
    }
}

/// Answers a request that waited for another's fetch, by how it ended.
async fn collapsed(s: &mut TcpStream, x: &Xact<'_>, outcome: Outcome, d: &Directives) -> Done {
    let Xact { req, sh, .. } = *x;
    match outcome {
        Outcome::Stored(obj) if answers(sh, &obj, req, d) => {
            sh.stats.hits.fetch_add(1, Ordering::Relaxed);
            sh.stats.collapsed.fetch_add(1, Ordering::Relaxed);
            serve_stored(s, x, &obj, Served::Collapsed).await
        }
        // The Collector's requests are each its own: another one's
        // failed fetch is no answer to it (SPE compares each copy).
        Outcome::Failed(status) if !sh.cfg.collector => {
            sh.stats.misses.fetch_add(1, Ordering::Relaxed);
            let served = CacheStatus {
                collapsed: true,
                detail: Some("origin-error"),
                ..CacheStatus::forwarded(Fwd::UriMiss)
            };
            gateway_error(s, status, served, sh).await
        }
        // Not stored, or not what this request selects: it asks itself.
        _ => {
            sh.stats.misses.fetch_add(1, Ordering::Relaxed);
            forward(s, x, None, LogCode::Miss).await
        }
    }
}

/// Whether an object another request's fetch just stored answers this
/// one: the fetched variant may not be the one it selects (`Vary`), and a
/// fetch begun before this request came may bring a reply already past
/// its lifetime.
fn answers(sh: &Shared, obj: &Object, req: &RequestHead, directives: &Directives) -> bool {
    obj.matches(request_fields(req))
        && collector_serves(sh, obj, req)
        && (sh.cfg.collector
            || matches!(
                reuse(directives, &obj.fresh, sh.cfg.clock.unix_now()),
                Reuse::Fresh | Reuse::Stale
            ))
}

/// Whether a stored reply answers this request: always, except at the
/// Collector, which keeps a reply no cache may reuse for the copies of the
/// client request that fetched it only.
fn collector_serves(sh: &Shared, obj: &Object, req: &RequestHead) -> bool {
    !sh.cfg.collector || collected_for(&obj.head).is_none_or(|name| copy_name(req) == Some(name))
}

/// A request's header fields as the cache's functions take them.
pub(crate) fn request_fields(req: &RequestHead) -> impl Iterator<Item = (&str, &[u8])> + Clone {
    req.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
}

/// The stored response (the variant, if it varies) for this request.
async fn lookup(sh: &Arc<Shared>, key: u64, url: &str, req: &RequestHead) -> Option<Arc<Object>> {
    if let Some(o) = sh.cache.get_memory_keyed(key, url, request_fields(req)) {
        return Some(o);
    }
    if !sh.cache.has_disk() {
        return None;
    }
    let (sh, url, fields) = (sh.clone(), url.to_string(), req.headers.clone());
    tokio::task::spawn_blocking(move || {
        let fields = fields.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
        sh.cache.get_disk_for(&url, fields)
    })
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
    let filed = sh.cache.put_memory(obj.clone());
    if sh.cache.has_disk() {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || {
            if sh.cache.put_disk(&obj, filed).is_err() {
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
    // With no validator to ask with, the whole object is asked for, under
    // the same rules for an origin error (stale-if-error).
    let request = validation_request(req, &t.authority, &t.path, &obj, sh.cfg.collector)
        .unwrap_or_else(|| {
            let cond = Conditional::Strip;
            origin_request(req, &t.authority, &t.path, cond, &[], sh.cfg.collector)
        });
    let sent_at = sh.cfg.clock.unix_now();
    let directives = Directives::parse(request_fields(req));
    let failed = |status| match on_origin_error(&directives, &obj.fresh, sh.cfg.clock.unix_now()) {
        OnError::ServeStale => None,
        OnError::GatewayTimeout => Some(504),
        OnError::Error => Some(status),
    };
    let reply = match exchange(pool, &sh.cfg, &t.authority, &request, false, true).await {
        Ok(r) => r,
        Err(e) => {
            let Some(status) = failed(e.status()) else {
                leader.finish(Some(obj.clone()));
                return serve_stored(s, x, &obj, Served::StaleOnError(None)).await;
            };
            leader.fail(status);
            let served = CacheStatus {
                detail: Some("origin-error"),
                ..CacheStatus::forwarded(Fwd::Stale)
            };
            return gateway_error(s, status, served, sh).await;
        }
    };
    let origin_error = matches!(reply.head.status, 500 | 502 | 503 | 504);
    if origin_error {
        // stale-if-error (RFC 5861 §4), or 504 for a copy that must
        // never be served stale (RFC 9111 §5.2.2.2).
        match failed(reply.head.status) {
            None => {
                leader.finish(Some(obj.clone()));
                let how = Served::StaleOnError(Some(reply.head.status));
                return serve_stored(s, x, &obj, how).await;
            }
            Some(504) if reply.head.status != 504 => {
                leader.fail(504);
                let served = CacheStatus {
                    fwd_status: Some(reply.head.status),
                    detail: Some("must-revalidate"),
                    ..CacheStatus::forwarded(Fwd::Stale)
                };
                return gateway_error(s, 504, served, sh).await;
            }
            Some(_) => {}
        }
    }
    if reply.head.status != 304 {
        sh.stats.misses.fetch_add(1, Ordering::Relaxed);
        return relay(s, x, reply, Some(leader), LogCode::RefreshModified, sent_at).await;
    }
    sh.stats.revalidated.fetch_add(1, Ordering::Relaxed);
    let updated = freshen(sh, &obj, &reply.head, sent_at);
    reply.release(pool, &sh.cfg);
    leader.finish(Some(updated.clone()));
    serve_stored(s, x, &updated, Served::Revalidated).await
}

/// The request asking the origin whether `obj` changed, by its stored
/// validators (its ETag and Last-Modified, never Expires); `None` when it
/// has neither.
fn validation_request(
    req: &RequestHead,
    authority: &str,
    path: &str,
    obj: &Object,
    close: bool,
) -> Option<Vec<u8>> {
    let v = StoredValidators::of(obj.headers());
    if v.if_none_match.is_none() && v.if_modified_since.is_none() {
        return None;
    }
    let cond = Conditional::Validate {
        etag: v.if_none_match.as_deref(),
        since: v.if_modified_since.as_deref(),
    };
    Some(origin_request(req, authority, path, cond, &[], close))
}

/// A 200 to a HEAD freshens the stored response it describes, or drops
/// it when it describes another representation (RFC 9111 §4.3.5).
pub(crate) async fn head_update(
    sh: &Arc<Shared>,
    req: &RequestHead,
    url: &str,
    reply: &ResponseHead,
    sent_at: u64,
) {
    let Some(obj) = lookup(sh, key_of(url), url, req).await else {
        return;
    };
    let fields = reply
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()));
    if head_updates(&obj, fields) {
        freshen(sh, &obj, reply, sent_at);
    } else {
        remove(sh, url).await;
    }
}

/// Stores `obj` as the origin's 304 `reply` leaves it (RFC 9111 §4.3.4).
fn freshen(sh: &Arc<Shared>, obj: &Object, reply: &ResponseHead, sent_at: u64) -> Arc<Object> {
    let fields = reply
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()));
    let now = sh.cfg.clock.unix_now();
    let mut updated = obj.freshened(fields, sent_at, now, &sh.cfg.targeted);
    // As on a miss, targeted fields are read, then not stored.
    let targeted = sh.cfg.targeted.strip_downstream(updated.headers());
    if !targeted.is_empty() {
        updated.head = strip_fields(&updated.head, &targeted).into();
    }
    let updated = Arc::new(updated);
    store(sh, updated.clone());
    updated
}

/// `stale-while-revalidate`: the stale copy is served and this task asks
/// the origin meanwhile, with no client waiting; a 304 freshens the copy,
/// anything else drops it, so the next request fetches it as a miss.
fn background_revalidation(x: &Xact<'_>, obj: Arc<Object>, leader: Leader) {
    let Some(request) = validation_request(x.req, &x.t.authority, &x.t.path, &obj, true) else {
        return;
    };
    let (sh, authority) = (x.sh.clone(), x.t.authority.clone());
    tokio::task::spawn_local(async move {
        let sent_at = sh.cfg.clock.unix_now();
        let pool = crate::upstream::Pool::default();
        match exchange(&pool, &sh.cfg, &authority, &request, false, true).await {
            Ok(reply) if reply.head.status == 304 => {
                leader.finish(Some(freshen(&sh, &obj, &reply.head, sent_at)));
            }
            _ => {
                remove(&sh, &obj.url).await;
                leader.finish(None);
            }
        }
    });
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
        Err(e) => {
            let served = CacheStatus {
                detail: Some("origin-error"),
                ..CacheStatus::forwarded(fwd_for(req, code, sh.cfg.stores()))
            };
            origin_failed(s, e, leader, served, sh).await
        }
    }
}

/// The client learns that the origin failed, as a proxy's error status;
/// so do the requests waiting for this fetch.
async fn origin_failed(
    s: &mut TcpStream,
    e: FetchError,
    leader: Option<Leader>,
    served: CacheStatus,
    sh: &Shared,
) -> Done {
    if let Some(l) = leader {
        l.fail(e.status());
    }
    gateway_error(s, e.status(), served, sh).await
}

/// The proxy's error reply for a request the origin (or the store) could
/// not answer, saying why in `Cache-Status`.
async fn gateway_error(s: &mut TcpStream, status: u16, served: CacheStatus, sh: &Shared) -> Done {
    sh.stats.origin_errors.fetch_add(1, Ordering::Relaxed);
    let out = error_reply(status, &served, sh.cfg.collector);
    let _ = s.write_all(&out).await;
    Done::error(status, out.len() as u64)
}
