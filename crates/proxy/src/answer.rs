//! The front door's decision for one request ([`answer`]): hit,
//! revalidate, miss or collapse onto a fetch under way. Every way ends in
//! one [`Decision`] and the reply it takes ([`Reply`]); deciding writes
//! nothing to the client. [`send`] then counts the decision, once, and
//! sends the reply: a stored copy (`hit`), the origin's reply relayed
//! (`relay`), or the proxy's own error ([`own_reply`]).

use crate::config::Role;
use crate::damage::misbehave;
use crate::decision::{Decision, Failure, Miss};
use crate::fault::Fault;
use crate::framing::{collected_for, copy_name, error_reply};
use crate::hit::serve_stored;
use crate::inflight::{Join, Leader, Outcome};
use crate::relay::relay;
use crate::store::{freshen, lookup, remove};
use crate::upstream::{exchange, origin_request, Conditional, OriginReply, Pool};
use crate::xact::{request_fields, Done, Xact};
use crate::Shared;
use cacheoff_cache::validators::Conditional as StoredValidators;
use cacheoff_cache::{key_of, on_origin_error, reuse, Directives, Object, OnError, Reuse};
use cacheoff_http::{Method, RequestHead};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How a decided request is answered.
// Made once per request and moved once: not worth a box per miss.
#[allow(clippy::large_enum_variant)]
enum Reply {
    /// A stored copy: one found, one another request's fetch just stored,
    /// or one the origin just confirmed.
    Stored(Arc<Object>, Decision),
    /// The origin's reply, relayed (and stored when allowed). `leader`:
    /// this fetch may fill the store (others may be waiting for it);
    /// `sent_at`: when the request left, for freshness.
    Relayed {
        reply: OriginReply,
        leader: Option<Leader>,
        why: Miss,
        sent_at: u64,
    },
    /// The proxy's own error reply.
    Own(Decision),
}

impl Reply {
    fn decision(&self) -> Decision {
        match self {
            Reply::Stored(_, d) | Reply::Own(d) => *d,
            Reply::Relayed { why, .. } => Decision::Miss(*why),
        }
    }
}

/// Answers one request.
pub(crate) async fn answer(s: &mut TcpStream, x: &Xact<'_>) -> Done {
    let sh = x.sh;
    sh.stats.requests.fetch_add(1, Ordering::Relaxed);
    if !sh.cfg.faults.is_empty() {
        if let Some(done) = misbehave(s, sh).await {
            return done;
        }
    }
    let reply = decide(x).await;
    send(s, x, reply).await
}

/// Counts the request's decision, before the client has any of the
/// reply, and sends the reply.
async fn send(s: &mut TcpStream, x: &Xact<'_>, reply: Reply) -> Done {
    x.sh.stats.count(&reply.decision());
    match reply {
        Reply::Stored(obj, how) => serve_stored(s, x, &obj, how, true).await,
        Reply::Relayed {
            reply,
            leader,
            why,
            sent_at,
        } => relay(s, x, reply, leader, why, sent_at).await,
        Reply::Own(d) => own_reply(s, x.sh, d).await,
    }
}

/// The proxy's own reply for a request it refuses or cannot answer,
/// saying why in `Cache-Status`; the connection closes after it.
pub(crate) async fn own_reply(s: &mut TcpStream, sh: &Shared, d: Decision) -> Done {
    // Every own reply's decision is a refusal or an error, which has one.
    let status = d.own_status().unwrap_or(500);
    let out = error_reply(status, &d.cache_status(None), sh.cfg.role);
    let _ = s.write_all(&out).await;
    Done::own(d, status, out.len() as u64)
}

/// Decides how to answer a request: from the store, from the origin, or
/// from another request's fetch.
async fn decide(x: &Xact<'_>) -> Reply {
    let Xact { req, t, sh, .. } = *x;
    let cacheable_method = matches!(req.method, Method::Get | Method::Head);
    if !cacheable_method {
        // Unsafe methods invalidate what is stored for the URL (RFC 9111 §4.4).
        let safe = matches!(&req.method, Method::Other(m) if m == "OPTIONS" || m == "TRACE");
        if !safe && !sh.cfg.faults.strikes(Fault::KeepAfterPost) {
            remove(sh, &t.url).await;
        }
        return fetch(x, None, Miss::Method).await;
    }
    if !sh.cfg.stores() {
        // Nothing is ever stored, so nothing is looked up or waited for.
        return fetch(x, None, Miss::Bypass).await;
    }
    let directives = Directives::parse(request_fields(req));
    let reload_asked = directives.no_cache || directives.max_age == Some(0);
    let reload = reload_asked && !sh.cfg.faults.strikes(Fault::ReloadHit);
    let key = key_of(&t.url);
    if reload {
        let leader = if req.method == Method::Get {
            sh.inflight.lead(key)
        } else {
            None
        };
        return fetch(x, leader, Miss::Reload).await;
    }
    // The Collector serves a reply no cache may reuse only to the copies
    // of the client request that fetched it.
    let found = lookup(sh, key, &t.url, req)
        .await
        .filter(|obj| collector_serves(sh, obj, req));
    if let Some(obj) = found {
        let now = sh.cfg.clock.unix_now();
        // A reload that got this far is the reload-hit fault: served as is.
        let judged = sh.cfg.role.judges_freshness();
        let reuse = if !judged || reload_asked || sh.cfg.faults.strikes(Fault::Stale) {
            Reuse::Fresh
        } else {
            reuse(&directives, &obj.fresh, now)
        };
        match reuse {
            Reuse::Fresh | Reuse::Stale => return Reply::Stored(obj, Decision::Hit),
            Reuse::GatewayTimeout => return Reply::Own(Decision::Error(Failure::OnlyIfCached)),
            // Served stale now only if the origin is asked meanwhile.
            Reuse::StaleWhileRevalidate if req.method == Method::Get => {
                if let Some(leader) = sh.inflight.lead(key) {
                    background_revalidation(x, obj.clone(), leader);
                }
                return Reply::Stored(obj, Decision::Hit);
            }
            Reuse::StaleWhileRevalidate | Reuse::Validate => {}
        }
        if req.method == Method::Get {
            if let Some(leader) = sh.inflight.lead(key) {
                return revalidate(x, obj, leader).await;
            }
        }
        // HEAD of a stale object, or a revalidation under way: ask the origin.
        return fetch(x, None, Miss::Uri).await;
    }
    if directives.only_if_cached {
        // RFC 9111 §5.2.1.7: nothing stored answers it.
        return Reply::Own(Decision::Error(Failure::OnlyIfCached));
    }
    // A HEAD, or a range of an object not stored: the origin answers it
    // and nothing is stored (partial replies are never combined).
    let ranged = req
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("range"));
    if req.method == Method::Head || ranged {
        return fetch(x, None, Miss::Uri).await;
    }
    collapse(x, key, &directives).await
}

/// A GET of an object not stored: it leads the fetch, or waits for the
/// one under way (and, when that one falls late, leads one in its place
/// or waits for the waiter that does).
async fn collapse(x: &Xact<'_>, key: u64, directives: &Directives) -> Reply {
    let Xact { req, t, sh, .. } = *x;
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
                if let Some(obj) = stored.filter(|o| answers(sh, o, req, directives)) {
                    leader.finish(Some(obj.clone()));
                    return Reply::Stored(obj, Decision::Hit);
                }
                let why = if took_over { Miss::TookOver } else { Miss::Uri };
                return fetch(x, Some(leader), why).await;
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
        return collapsed(x, outcome, directives).await;
    }
}

/// Answers a request that waited for another's fetch, by how it ended.
async fn collapsed(x: &Xact<'_>, outcome: Outcome, d: &Directives) -> Reply {
    let Xact { req, sh, .. } = *x;
    match outcome {
        Outcome::Stored(obj) if answers(sh, &obj, req, d) => {
            Reply::Stored(obj, Decision::Collapsed)
        }
        // The Collector's requests are each its own: another one's
        // failed fetch is no answer to it (SPE compares each copy).
        Outcome::Failed(status) if sh.cfg.role != Role::Collector => {
            Reply::Own(Decision::Error(Failure::Collapsed(status)))
        }
        // Not stored, or not what this request selects: it asks itself.
        _ => fetch(x, None, Miss::Uri).await,
    }
}

/// Whether an object another request's fetch just stored answers this
/// one: the fetched variant may not be the one it selects (`Vary`), and a
/// fetch begun before this request came may bring a reply already past
/// its lifetime.
fn answers(sh: &Shared, obj: &Object, req: &RequestHead, directives: &Directives) -> bool {
    obj.matches(request_fields(req))
        && collector_serves(sh, obj, req)
        && (!sh.cfg.role.judges_freshness()
            || matches!(
                reuse(directives, &obj.fresh, sh.cfg.clock.unix_now()),
                Reuse::Fresh | Reuse::Stale
            ))
}

/// Whether a stored reply answers this request: always, except at the
/// Collector, which keeps a reply no cache may reuse for the copies of the
/// client request that fetched it only.
fn collector_serves(sh: &Shared, obj: &Object, req: &RequestHead) -> bool {
    sh.cfg.role != Role::Collector
        || collected_for(&obj.head).is_none_or(|name| copy_name(req) == Some(name))
}

/// A stale object: ask the origin whether it changed.
async fn revalidate(x: &Xact<'_>, obj: Arc<Object>, leader: Leader) -> Reply {
    let Xact {
        req, t, sh, pool, ..
    } = *x;
    let close = !sh.cfg.role.reuses_origin_connections();
    // With no validator to ask with, the whole object is asked for, under
    // the same rules for an origin error (stale-if-error).
    let request =
        validation_request(req, &t.authority, &t.path, &obj, close).unwrap_or_else(|| {
            let cond = Conditional::Strip;
            origin_request(req, &t.authority, &t.path, cond, &[], close)
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
                return Reply::Stored(obj, Decision::StaleServed(None));
            };
            leader.fail(status);
            return Reply::Own(Decision::Error(Failure::Origin(Miss::Stale, status)));
        }
    };
    let origin_error = matches!(reply.head.status, 500 | 502 | 503 | 504);
    if origin_error {
        // stale-if-error (RFC 5861 §4), or 504 for a copy that must
        // never be served stale (RFC 9111 §5.2.2.2).
        match failed(reply.head.status) {
            None => {
                leader.finish(Some(obj.clone()));
                let served = Decision::StaleServed(Some(reply.head.status));
                return Reply::Stored(obj, served);
            }
            Some(504) if reply.head.status != 504 => {
                leader.fail(504);
                let failure = Failure::MustRevalidate(reply.head.status);
                return Reply::Own(Decision::Error(failure));
            }
            Some(_) => {}
        }
    }
    if reply.head.status != 304 {
        return Reply::Relayed {
            reply,
            leader: Some(leader),
            why: Miss::Stale,
            sent_at,
        };
    }
    let updated = freshen(sh, &obj, &reply.head, sent_at);
    reply.release(pool, &sh.cfg);
    leader.finish(Some(updated.clone()));
    Reply::Stored(updated, Decision::Revalidated)
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
        let pool = Pool::default();
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

/// Sends the request to the origin, for `why`: its reply to relay, or
/// the error the client (and the requests waiting for this fetch) get.
async fn fetch(x: &Xact<'_>, leader: Option<Leader>, why: Miss) -> Reply {
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
    let close = !sh.cfg.role.reuses_origin_connections();
    let request = origin_request(req, &t.authority, &t.path, cond, body, close);
    let idempotent = matches!(req.method, Method::Get | Method::Head);
    let head_request = req.method == Method::Head;
    match exchange(
        pool,
        &sh.cfg,
        &t.authority,
        &request,
        head_request,
        idempotent,
    )
    .await
    {
        Ok(reply) => Reply::Relayed {
            reply,
            leader,
            why,
            sent_at,
        },
        Err(e) => {
            if let Some(l) = leader {
                l.fail(e.status());
            }
            Reply::Own(Decision::Error(Failure::Origin(why, e.status())))
        }
    }
}
