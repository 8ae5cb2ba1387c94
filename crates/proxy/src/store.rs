//! The store's reads and writes for a request, off the runtime when they
//! touch the disk: the lookup of the copy (the variant) a request
//! selects, storing, removing, and the head updates a 304 or a HEAD's
//! 200 make (RFC 9111 §4.3.4, §4.3.5).

use crate::xact::request_fields;
use crate::Shared;
use cacheoff_cache::storage::strip_fields;
use cacheoff_cache::update::head_updates;
use cacheoff_cache::{key_of, Object};
use cacheoff_http::{RequestHead, ResponseHead};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The stored response (the variant, if it varies) for this request.
pub(crate) async fn lookup(
    sh: &Arc<Shared>,
    key: u64,
    url: &str,
    req: &RequestHead,
) -> Option<Arc<Object>> {
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
pub(crate) fn freshen(
    sh: &Arc<Shared>,
    obj: &Object,
    reply: &ResponseHead,
    sent_at: u64,
) -> Arc<Object> {
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
