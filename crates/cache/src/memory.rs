//! The memory store: objects by URL key under a byte budget, evicted by a
//! [`Policy`]. Not synchronized; [`crate::Cache`] shards and locks it.
//!
//! A key holds one object without `Vary` (the common case: one hash
//! lookup, no header is read) or up to [`MAX_VARIANTS`] objects with
//! secondary keys, newest last. A reply without `Vary` replaces every
//! variant of its URL; a variant replaces the one with the same key and
//! any object without one. The policy sees one entry per URL, charged for
//! all its variants, and evicts them together.

use crate::object::{KeyMap, Object};
use crate::policy::{Eviction, Policy};
use std::sync::Arc;

/// Variants kept per URL; storing one more drops the oldest.
pub const MAX_VARIANTS: usize = 8;

/// A URL's objects: the common case without `Vary` costs no extra
/// allocation or indirection on a hit.
enum Slot {
    One(Arc<Object>),
    Variants(Vec<Arc<Object>>),
}

impl Slot {
    fn objects(&self) -> &[Arc<Object>] {
        match self {
            Slot::One(o) => std::slice::from_ref(o),
            Slot::Variants(v) => v,
        }
    }
}

pub struct MemStore {
    capacity: u64,
    slots: KeyMap<Slot>,
    objects: usize,
    policy: Box<dyn Eviction>,
}

fn charge(slot: &[Arc<Object>]) -> u64 {
    slot.iter().map(|o| o.charge()).sum()
}

impl MemStore {
    pub fn new(capacity: u64, policy: Policy) -> MemStore {
        MemStore {
            capacity,
            slots: KeyMap::default(),
            objects: 0,
            policy: policy.build(capacity),
        }
    }

    /// The object stored for `url` that a request without headers
    /// selects (any object without `Vary`), counting the use.
    pub fn get(&mut self, key: u64, url: &str) -> Option<Arc<Object>> {
        self.get_for(key, url, std::iter::empty())
    }

    /// The newest object stored for `url` that a request with `request`
    /// headers selects (RFC 9111 §4.1), counting the use.
    pub fn get_for<'a, R>(&mut self, key: u64, url: &str, request: R) -> Option<Arc<Object>>
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let slot = self.slots.get(&key)?;
        let o = slot
            .objects()
            .iter()
            .rev()
            .find(|o| o.url == url && o.matches(request.clone()))?;
        self.policy.hit(key);
        Some(o.clone())
    }

    /// Every object stored for `url` (its variants, oldest first), without
    /// counting a use.
    pub fn variants(&self, key: u64, url: &str) -> Vec<Arc<Object>> {
        self.slots
            .get(&key)
            .map(|s| {
                s.objects()
                    .iter()
                    .filter(|o| o.url == url)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stores `object` (replacing what it supersedes), then evicts until
    /// the budget holds; returns how many URLs were evicted. An object
    /// larger than the whole budget, or with `Vary` but no secondary key,
    /// is not stored.
    pub fn insert(&mut self, object: Arc<Object>) -> usize {
        let key = object.key();
        if object.charge() > self.capacity || !object.storable_key() {
            // What it would have replaced is outdated all the same.
            self.remove(key);
            return 0;
        }
        // A replaced object keeps its place in the policy: only its size
        // changes (a reload or a freshened copy is a use, not a new object).
        let present = self.slots.remove(&key).map(|slot| {
            self.objects -= slot.objects().len();
            match slot {
                Slot::One(o) => vec![o],
                Slot::Variants(v) => v,
            }
        });
        let replacing = present.is_some();
        let mut slot = present.unwrap_or_default();
        match &object.vary {
            None => slot.clear(),
            Some(v) => {
                slot.retain(|o| o.url == object.url && o.vary.as_ref().is_some_and(|w| w != v));
                if slot.len() >= MAX_VARIANTS {
                    slot.drain(..=slot.len() - MAX_VARIANTS);
                }
            }
        }
        slot.push(object);
        if replacing {
            self.policy.update(key, charge(&slot));
        } else {
            self.policy.insert(key, charge(&slot));
        }
        self.put_back(key, slot);
        let mut evicted = 0;
        while self.policy.bytes() > self.capacity {
            let Some(victim) = self.policy.evict() else {
                break;
            };
            if let Some(s) = self.slots.remove(&victim) {
                self.objects -= s.objects().len();
            }
            evicted += 1;
        }
        evicted
    }

    /// Files a non-empty slot the policy already knows.
    fn put_back(&mut self, key: u64, slot: Vec<Arc<Object>>) {
        self.objects += slot.len();
        let slot = match <[_; 1]>::try_from(slot) {
            Ok([o]) if o.vary.is_none() => Slot::One(o),
            Ok([o]) => Slot::Variants(vec![o]),
            Err(v) => Slot::Variants(v),
        };
        self.slots.insert(key, slot);
    }

    /// Drops every variant stored under `key`.
    pub fn remove(&mut self, key: u64) -> bool {
        let Some(slot) = self.slots.remove(&key) else {
            return false;
        };
        self.policy.remove(key);
        self.objects -= slot.objects().len();
        true
    }

    /// Objects stored (variants count one each).
    pub fn len(&self) -> usize {
        self.objects
    }

    pub fn is_empty(&self) -> bool {
        self.objects == 0
    }

    pub fn bytes(&self) -> u64 {
        self.policy.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::Freshness;
    use bytes::Bytes;

    fn h<'a>(v: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        v.iter().map(|(n, v)| (*n, v.as_bytes()))
    }

    fn object(url: &str, head: &str, body: &str) -> Object {
        Object {
            url: url.into(),
            status: 200,
            head: Bytes::from(head.to_string()),
            body: Bytes::from(body.to_string()),
            fresh: Freshness::of_reply([("Cache-Control", b"max-age=60".as_slice())], 0, 0),
            timing: None,
            vary: None,
        }
    }

    fn variant(url: &str, enc: &str) -> Arc<Object> {
        Arc::new(
            object(url, "Vary: Accept-Encoding\r\n", enc).keyed_by(h(&[("Accept-Encoding", enc)])),
        )
    }

    const U: &str = "http://o/x";

    #[test]
    fn rfc9111_4_1_variants_are_selected_by_the_request() {
        let mut m = MemStore::new(1 << 20, Policy::S3Fifo);
        let k = crate::key_of(U);
        m.insert(variant(U, "gzip"));
        m.insert(variant(U, "br"));
        assert_eq!(m.len(), 2);
        let got = |m: &mut MemStore, enc: &str| {
            m.get_for(k, U, h(&[("Accept-Encoding", enc)]))
                .map(|o| o.body.clone())
        };
        assert_eq!(got(&mut m, "gzip").as_deref(), Some(&b"gzip"[..]));
        assert_eq!(got(&mut m, "br").as_deref(), Some(&b"br"[..]));
        assert_eq!(got(&mut m, "identity"), None);
        assert!(m.get(k, U).is_none());
        // The same key again replaces its variant.
        m.insert(Arc::new(
            object(U, "Vary: accept-encoding\r\n", "gzip2")
                .keyed_by(h(&[("Accept-Encoding", "gzip")])),
        ));
        assert_eq!(m.len(), 2);
        assert_eq!(got(&mut m, "gzip").as_deref(), Some(&b"gzip2"[..]));
        assert_eq!(m.variants(k, U).len(), 2);
        assert!(m.remove(k));
        assert!(m.is_empty() && m.bytes() == 0);
    }

    #[test]
    fn rfc9111_4_1_a_reply_without_vary_replaces_all_variants_and_back() {
        let mut m = MemStore::new(1 << 20, Policy::Lru);
        let k = crate::key_of(U);
        m.insert(variant(U, "gzip"));
        m.insert(variant(U, "br"));
        m.insert(Arc::new(object(U, "", "plain")));
        assert_eq!(m.len(), 1);
        assert!(m
            .get_for(k, U, h(&[("Accept-Encoding", "gzip")]))
            .is_some_and(|o| o.body == "plain"));
        assert!(m.get(k, U).is_some());
        m.insert(variant(U, "br"));
        assert_eq!(m.len(), 1);
        assert!(m.get(k, U).is_none());
        assert_eq!(m.bytes(), variant(U, "br").charge());
    }

    #[test]
    fn rfc9111_4_1_variants_are_bounded_oldest_dropped() {
        let mut m = MemStore::new(1 << 20, Policy::S3Fifo);
        let k = crate::key_of(U);
        for i in 0..MAX_VARIANTS + 3 {
            m.insert(variant(U, &format!("e{i}")));
        }
        assert_eq!(m.len(), MAX_VARIANTS);
        assert!(m.get_for(k, U, h(&[("Accept-Encoding", "e2")])).is_none());
        assert!(m.get_for(k, U, h(&[("Accept-Encoding", "e3")])).is_some());
        let total: u64 = m.variants(k, U).iter().map(|o| o.charge()).sum();
        assert_eq!(m.bytes(), total);
    }

    #[test]
    fn rfc9111_4_1_vary_star_is_stored_but_never_served_and_unkeyed_vary_is_refused() {
        let mut m = MemStore::new(1 << 20, Policy::S3Fifo);
        let k = crate::key_of(U);
        m.insert(Arc::new(object(U, "Vary: *\r\n", "star").keyed_by(h(&[]))));
        assert_eq!(m.len(), 1);
        assert!(m.get_for(k, U, h(&[])).is_none());
        // Vary in the head but no secondary key: nothing stored.
        m.insert(Arc::new(object(U, "Vary: Accept\r\n", "?")));
        assert!(m.is_empty());
    }

    #[test]
    fn a_replaced_object_keeps_what_its_uses_earned() {
        // Used once, then replaced (a reload, a 304's freshened copy): it
        // is not a new object on probation again, so a stream of one-hit
        // wonders does not push it out.
        let one = object("http://o/00", "", "x").charge();
        let mut m = MemStore::new(one * 20, Policy::S3Fifo);
        let k = crate::key_of(U);
        m.insert(Arc::new(object(U, "", "x")));
        assert!(m.get(k, U).is_some());
        m.insert(Arc::new(object(U, "", "y")));
        assert_eq!((m.len(), m.bytes()), (1, object(U, "", "y").charge()));
        for i in 0..100 {
            m.insert(Arc::new(object(&format!("http://o/{i:02}"), "", "x")));
            assert!(m.bytes() <= one * 20);
        }
        assert!(m.get(k, U).is_some_and(|o| o.body == "y"));
    }

    #[test]
    fn eviction_drops_a_url_with_all_its_variants_and_keeps_the_budget() {
        let one = variant(U, "gzip").charge();
        let mut m = MemStore::new(one * 5, Policy::Lru);
        m.insert(variant(U, "gzip"));
        m.insert(variant(U, "br"));
        for i in 0..4 {
            m.insert(Arc::new(object(&format!("http://o/{i}"), "", "gzip")));
            assert!(m.bytes() <= one * 5);
        }
        assert!(m.variants(crate::key_of(U), U).is_empty());
        assert_eq!(m.len(), 4);
    }
}
