//! A stored reply and the key it is stored under.

use crate::control::Directives;
use crate::freshness::Freshness;
use crate::merge::merge_headers;
use crate::targeted::Targeted;
use crate::vary::Variant;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// The store's key for a URL. Keys are hashes; every object keeps its URL
/// and a lookup compares it, so a collision is a miss, never a wrong reply.
pub fn key_of(url: &str) -> u64 {
    // SipHash with fixed keys; keys never outlive the process except on
    // disk, where the index is rebuilt from the stored URLs.
    let mut h = std::hash::DefaultHasher::new();
    url.hash(&mut h);
    h.finish()
}

/// Maps keyed by [`key_of`]: the key is already a hash, so the map only
/// multiplies it (spreading small test keys too) instead of hashing it
/// again with SipHash (a hit looks a key up in the store and the policy).
pub(crate) type KeyMap<V> = std::collections::HashMap<u64, V, BuildKey>;

pub(crate) type BuildKey = std::hash::BuildHasherDefault<KeyHasher>;

/// Fibonacci hashing of a `u64` key; other keys fold their bytes in.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// How long the origin took, for the Collector to replay on hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// From the request's arrival to the reply's first byte (connection
    /// set-up, name resolution and the origin's think time included).
    pub first_byte: Duration,
    /// From the first byte of the reply to its last.
    pub transfer: Duration,
    /// How long the miss took the proxy: from the request's arrival to
    /// the last byte written to the client (what each hit should take).
    #[serde(default)]
    pub served: Duration,
}

/// A complete stored reply.
#[derive(Debug, Clone)]
pub struct Object {
    pub url: String,
    pub status: u16,
    /// End-to-end header lines as received, each `Name: value\r\n`, without
    /// hop-by-hop headers and framing; the proxy adds its own.
    pub head: Bytes,
    pub body: Bytes,
    pub fresh: Freshness,
    pub timing: Option<Timing>,
    /// The secondary key (RFC 9111 §4.1): None when the reply has no
    /// `Vary`. Set it with [`Object::keyed_by`]; the stores refuse an
    /// object whose head has `Vary` but no key, as they cannot tell which
    /// requests it answers.
    pub vary: Option<Variant>,
}

impl Object {
    pub fn key(&self) -> u64 {
        key_of(&self.url)
    }

    /// Bytes this object costs the store (bookkeeping included).
    pub fn charge(&self) -> u64 {
        (self.url.len() + self.head.len() + self.body.len() + 256) as u64
    }

    /// Sets the secondary key from the head's `Vary` and the headers of
    /// the request this reply answered.
    pub fn keyed_by<'a, R>(mut self, request: R) -> Object
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        self.vary = Variant::of(self.headers(), request);
        self
    }

    /// Whether this object may answer a request with these headers (its
    /// secondary key matches; always when it has none).
    pub fn matches<'a, R>(&self, request: R) -> bool
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        self.vary.as_ref().is_none_or(|v| v.matches(request))
    }

    /// Keyed consistently: a head with `Vary` needs a secondary key.
    pub(crate) fn storable_key(&self) -> bool {
        self.vary.is_some() || !crate::vary::has_vary(self.headers())
    }

    /// The object a `304` (or a `HEAD` reply) to a request sent at
    /// `request_time`, received at `response_time`, leaves (RFC 9111
    /// §4.3.4): its fields merged into the stored ones
    /// ([`merge_headers`]; its `private=`/`no-cache=` fields dropped), and
    /// the freshness recomputed from the merged fields with the update's
    /// own `Date` and `Age`. Status, body, key and timing stay.
    pub fn freshened<'a, H>(
        &self,
        update: H,
        request_time: u64,
        response_time: u64,
        targeted: &Targeted,
    ) -> Object
    where
        H: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let cc = targeted
            .directives(update.clone())
            .unwrap_or_else(|| Directives::parse(update.clone()));
        let mut strip = cc.private_fields;
        strip.extend(cc.no_cache_fields);
        let head = Bytes::from(merge_headers(&self.head, update.clone(), &strip));
        let by = Freshness::of_response(self.status, update, request_time, response_time, targeted);
        let mut object = Object {
            head,
            fresh: by,
            ..self.clone()
        };
        let mut fresh = Freshness::of_response(
            self.status,
            object.headers(),
            request_time,
            response_time,
            targeted,
        );
        fresh.date = by.date;
        fresh.age = by.age;
        object.fresh = fresh;
        object
    }

    /// The header lines, as (name, value) pairs.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + Clone {
        header_pairs(&self.head)
    }
}

/// Header lines (`Name: value\r\n` each) as (name, value) pairs.
pub fn header_pairs(head: &[u8]) -> impl Iterator<Item = (&str, &[u8])> + Clone {
    head.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let i = line.iter().position(|&b| b == b':')?;
        let name = std::str::from_utf8(&line[..i]).ok()?;
        Some((name.trim(), line[i + 1..].trim_ascii()))
    })
}
