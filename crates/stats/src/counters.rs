//! The counter table: every plain counter is named and described once,
//! below, and the table generates the snapshot's [`Counters`], their
//! addition, the [`Counts`] an entry carries (its `counts` object), and the
//! [`Counter`] set that exports and the docs check iterate.

use crate::kinds::ErrorKind;
use cacheoff_base::RequestType;
use serde::{Deserialize, Serialize};

/// Most content types counted separately (the rest share the last slot).
pub const MAX_CONTENT_TYPES: usize = 16;

/// Transactions and bytes of one content type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TypeCount {
    pub xacts: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Replies that carried the whole object (so bytes ÷ bodies is the mean
    /// object size; 304s and HEADs carry none). Absent in older runs.
    #[serde(default)]
    pub bodies: u64,
    /// Transactions served as hits. Absent in older runs.
    #[serde(default)]
    pub hits: u64,
}

impl TypeCount {
    pub fn add(&mut self, o: &TypeCount) {
        self.xacts += o.xacts;
        self.bytes += o.bytes;
        self.bodies += o.bodies;
        self.hits += o.hits;
    }
}

fn add_each<T: Copy>(a: &mut [T], b: &[T], add: impl Fn(&mut T, &T)) {
    for (x, y) in a.iter_mut().zip(b) {
        add(x, y);
    }
}

/// `sums` add up over workers and over time; `gauges` add up over workers
/// (a run-wide level) but over time keep their latest value. Each row is
/// `Variant field: "description"`; the field name is the persisted name.
macro_rules! counter_table {
    (
        sums { $($Sum:ident $sum:ident: $sum_doc:literal,)* }
        gauges { $($gauge:ident: $gauge_doc:literal,)* }
    ) => {
        /// A counter that adds up over time: a field of [`Counts`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Counter { $($Sum,)* }

        impl Counter {
            pub const ALL: &'static [Counter] = &[$(Counter::$Sum,)*];
            /// Its field name, in [`Counts`] and in an entry's `counts`.
            pub const fn name(self) -> &'static str {
                match self { $(Counter::$Sum => stringify!($sum),)* }
            }
            /// One line for docs and reports.
            pub const fn description(self) -> &'static str {
                match self { $(Counter::$Sum => $sum_doc,)* }
            }
        }

        /// The sums of a span, from which its entry's figures derive.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Counts { $(#[doc = $sum_doc] pub $sum: u64,)* }

        impl Counts {
            pub fn get(&self, c: Counter) -> u64 {
                match c { $(Counter::$Sum => self.$sum,)* }
            }
            pub fn add(&mut self, o: &Counts) {
                $(self.$sum += o.$sum;)*
            }
        }

        /// Counters of a snapshot: the table's sums and gauges, then counts
        /// per error kind, request type and content type.
        #[derive(Debug, Clone, Copy, Default)]
        pub struct Counters {
            $(#[doc = $sum_doc] pub $sum: u64,)*
            $(#[doc = $gauge_doc] pub $gauge: u64,)*
            pub errors: [u64; ErrorKind::COUNT],
            /// Successful transactions by request type.
            pub by_type: [u64; RequestType::COUNT],
            /// Successful transactions, body bytes, whole bodies and hits by
            /// content type.
            pub by_ctype: [TypeCount; MAX_CONTENT_TYPES],
        }

        impl Counters {
            pub fn counts(&self) -> Counts {
                Counts { $($sum: self.$sum,)* }
            }
            /// Adds another worker's or interval's counters, gauges included.
            pub fn add(&mut self, o: &Counters) {
                $(self.$sum += o.$sum;)*
                $(self.$gauge += o.$gauge;)*
                add_each(&mut self.errors, &o.errors, |x, y| *x += y);
                add_each(&mut self.by_type, &o.by_type, |x, y| *x += y);
                add_each(&mut self.by_ctype, &o.by_ctype, TypeCount::add);
            }
            /// Every number, in table order (sums, gauges, errors, request
            /// types, content types): the wire form between hosts.
            pub fn to_numbers(&self) -> Vec<u64> {
                let mut v = vec![$(self.$sum,)* $(self.$gauge,)*];
                v.extend_from_slice(&self.errors);
                v.extend_from_slice(&self.by_type);
                for t in &self.by_ctype {
                    v.extend_from_slice(&[t.xacts, t.bytes, t.bodies, t.hits]);
                }
                v
            }
            /// The inverse of [`Counters::to_numbers`]; `None` if the
            /// length is not this build's (another version's table).
            pub fn from_numbers(v: &[u64]) -> Option<Counters> {
                let mut it = v.iter().copied();
                let mut c = Counters::default();
                $(c.$sum = it.next()?;)*
                $(c.$gauge = it.next()?;)*
                for x in c.errors.iter_mut().chain(c.by_type.iter_mut()) {
                    *x = it.next()?;
                }
                for t in c.by_ctype.iter_mut() {
                    *t = TypeCount { xacts: it.next()?, bytes: it.next()?, bodies: it.next()?, hits: it.next()? };
                }
                it.next().is_none().then_some(c)
            }
            /// Takes a later interval's gauges: over time, a gauge is its
            /// latest value.
            pub fn take_gauges(&mut self, o: &Counters) {
                $(self.$gauge = o.$gauge;)*
            }
        }
    };
}

counter_table! {
    sums {
        Xacts xacts: "successful transactions (a verified reply)",
        Bytes bytes: "body bytes of successful transactions",
        FillBytes fill_bytes: "body bytes of cachable misses (what a cache had to store)",
        Issued issued: "planned requests the pacer issued (embedded objects not included)",
        IssuedLate issued_late: "planned requests the pacer issued more than 10 ms after their intended start",
        Sent sent: "requests sent (successful or not)",
        SentLate sent_late: "requests sent more than 10 ms after their intended start",
        Basic basic: "successful basic GETs (hit ratios count only these)",
        BasicBytes basic_bytes: "body bytes of successful basic GETs",
        OfferedHits offered_hits: "successful basic GETs the workload offered as hits: revisits of a cachable object, as Web Polygraph counts them",
        OfferedHitBytes offered_hit_bytes: "body bytes of the offered hits",
        IdealHits ideal_hits: "successful basic GETs an ideal cache hits: offered hits whose object an earlier GET fetched and no POST invalidated",
        IdealHitBytes ideal_hit_bytes: "body bytes of the hits an ideal cache makes",
        BasicHits basic_hits: "successful basic GETs answered by a cache",
        BasicHitBytes basic_hit_bytes: "body bytes of the basic GETs answered by a cache",
        AbortsRobot aborts_robot: "transactions robots aborted on purpose",
        AbortsServer aborts_server: "transactions origin servers aborted on purpose",
        ConnsOpened conns_opened: "connections robots opened",
        HitBytes hit_bytes: "body bytes of successful transactions answered by a cache (every request type)",
        ClaimHitWasMiss claim_hit_was_miss: "successful transactions the proxy claimed as hits (its strongest claim: Cache-Status, then X-Cache, Via, Age) that the transaction echo shows were misses",
        ClaimMissWasHit claim_miss_was_hit: "successful transactions the proxy claimed as misses (its strongest claim) that the transaction echo shows were hits",
        ClaimNone claim_none: "successful transactions whose reply claimed neither a hit nor a miss in any of Cache-Status, X-Cache, Via and Age",
        CacheStatusHitWasMiss cache_status_hit_was_miss: "successful transactions whose Cache-Status (its last member) claimed a hit that the echo shows was a miss",
        CacheStatusMissWasHit cache_status_miss_was_hit: "successful transactions whose Cache-Status (its last member) claimed a miss that the echo shows was a hit",
        CacheStatusNone cache_status_none: "successful transactions whose reply had no Cache-Status claiming a hit or a miss",
        XCacheHitWasMiss x_cache_hit_was_miss: "successful transactions whose X-Cache claimed a hit that the echo shows was a miss",
        XCacheMissWasHit x_cache_miss_was_hit: "successful transactions whose X-Cache claimed a miss that the echo shows was a hit",
        XCacheNone x_cache_none: "successful transactions whose reply had no X-Cache claiming a hit or a miss",
        ViaHitWasMiss via_hit_was_miss: "successful transactions whose Via (its last entry's comment) claimed a hit that the echo shows was a miss",
        ViaMissWasHit via_miss_was_hit: "successful transactions whose Via (its last entry's comment) claimed a miss that the echo shows was a hit",
        ViaNone via_none: "successful transactions whose reply had no Via claiming a hit or a miss",
        AgeHitWasMiss age_hit_was_miss: "successful transactions whose Age above 0 suggested a stored copy that the echo shows was a miss",
        AgeNone age_none: "successful transactions whose reply had no Age above 0 (Age never claims a miss)",
        TlsHandshakes tls_handshakes: "TLS handshakes robots completed",
        TlsResumed tls_resumed: "TLS handshakes that resumed an earlier session",
        Tunnels tunnels: "CONNECT tunnels a forward proxy opened for robots (HTTPS through a proxy: no hit can be seen inside one)",
        H2Refused h2_refused: "connections on which robots offered HTTP/2 and the server chose HTTP/1.1 (ALPN); they carry HTTP/1.1",
        LinkWaitUs link_wait_us: "microseconds the emulated WAN links (robots.link, servers.link) held requests and responses, both ends added",
    }
    gauges {
        conns_open: "robot connections open at the end of the interval",
        ws_full: "workers whose working set reached its cap",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fields_follow_the_table() {
        let mut names: Vec<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Counter::ALL.len());
        // Give each counter a distinct value; serde names each field as the
        // table does, and `get` reads the same field.
        let mut v = serde_json::Map::new();
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert!(!c.description().is_empty());
            v.insert(c.name().into(), (i as u64 + 1).into());
        }
        let counts: Counts = serde_json::from_value(v.into()).unwrap();
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(counts.get(*c), i as u64 + 1, "{}", c.name());
        }
    }

    #[test]
    fn counters_add_sums_and_gauges_and_keep_the_latest_gauge() {
        let mut a = Counters {
            xacts: 2,
            conns_open: 3,
            ..Default::default()
        };
        a.errors[1] = 1;
        a.by_ctype[0].hits = 4;
        let b = Counters {
            xacts: 5,
            basic_hit_bytes: 7,
            conns_open: 1,
            ..a
        };
        a.add(&b);
        assert_eq!((a.xacts, a.basic_hit_bytes, a.conns_open), (7, 7, 4));
        assert_eq!((a.errors[1], a.by_ctype[0].hits), (2, 8));
        a.take_gauges(&b);
        assert_eq!(a.conns_open, 1);
        let mut c = a.counts();
        c.add(&b.counts());
        assert_eq!(c.get(Counter::Xacts), 12);
    }
}
