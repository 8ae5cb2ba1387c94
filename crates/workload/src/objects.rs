//! The object universe: every property of an object follows from its id.
//!
//! Object ids: bits 0..40 a sequence number, bits 40..52 the world (the
//! worker that created the object), bits 52..59 the index of an embedded
//! object within its page (0 for pages and other directly requested
//! objects). An embedded object lives on its page's server.

use crate::content::{ContentType, Mix};
use crate::lifecycle::ObjectTimes;
use cacheoff_base::rng::{key, mix2, unit_f64, Stream};
use std::sync::Arc;

pub const WORLD_SHIFT: u32 = 40;
const WORLD_MASK: u64 = 0xFFF;
/// Distinct working sets (worlds) that object ids can name.
pub const MAX_WORLDS: usize = WORLD_MASK as usize + 1;
const EMBED_SHIFT: u32 = 52;
/// Most embedded objects per page.
pub const MAX_EMBEDDED: u32 = 127;
const URL_PREFIX: &str = "/cacheoff/";

/// The id of the `k`-th (1-based) object embedded in `page`.
pub fn embedded_oid(page: u64, k: u32) -> u64 {
    page | u64::from(k.min(MAX_EMBEDDED)) << EMBED_SHIFT
}

/// Splits an id into its page (itself for a page) and embedded index.
pub fn split_oid(oid: u64) -> (u64, u32) {
    let k = (oid >> EMBED_SHIFT) as u32 & MAX_EMBEDDED;
    (oid & !(u64::from(MAX_EMBEDDED) << EMBED_SHIFT), k)
}

#[derive(Clone, Copy)]
enum Property {
    Type,
    Cachable,
    Embeds,
}

/// What robots and servers both know about one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectInfo {
    pub oid: u64,
    /// Index of the content type.
    pub ctype: u16,
    /// Index of the URL extension within the type (None: no extension).
    pub ext: Option<u16>,
    /// Body length in bytes.
    pub size: u64,
    /// Answered with `Cache-Control: public` (else `private,no-cache`).
    pub cachable: bool,
    /// Responses carry `Content-MD5`.
    pub md5: bool,
    /// Objects embedded in this one (fetched after it).
    pub embeds: u32,
    /// Index of the origin server that owns the object.
    pub server: u32,
    /// Seed of the body bytes (see `cacheoff_http::body`).
    pub body_seed: u64,
    /// Seed of the life cycle (see [`ObjectSpace::times`]).
    pub life_seed: u64,
}

/// Maps object ids to [`ObjectInfo`]; cheap to clone and share read-only.
///
/// Servers are split into `partitions` groups (server `i` is in group
/// `i mod partitions`); objects of world `w` live on servers of group
/// `w mod partitions`. With one partition per worker, a worker's robots
/// only talk to its own servers in a direct run, which keeps traffic off
/// other cores.
#[derive(Debug, Clone)]
pub struct ObjectSpace {
    key: u64,
    /// Names this run in every URL, so no cache can answer one run's
    /// request with another run's object.
    run: u32,
    types: Arc<[ContentType]>,
    mix: Arc<Mix>,
    servers: u32,
    partitions: u32,
}

impl ObjectSpace {
    /// The content types must pass [`Mix::new`] (workload validation
    /// checks that).
    pub fn new(seed: u64, types: &[ContentType], servers: u32, partitions: u32) -> ObjectSpace {
        let servers = servers.max(1);
        ObjectSpace {
            key: key(seed, Stream::Objects),
            run: 0,
            mix: Arc::new(Mix::new(types).expect("validated content types")),
            types: types.into(),
            servers,
            partitions: partitions.clamp(1, servers),
        }
    }

    pub fn types(&self) -> &[ContentType] {
        &self.types
    }

    fn server_of(&self, page: u64) -> u32 {
        let part = (((page >> WORLD_SHIFT) & WORLD_MASK) % u64::from(self.partitions)) as u32;
        // Servers part, part + partitions, part + 2 * partitions, ...
        let in_part = (self.servers - part).div_ceil(self.partitions);
        let h = mix2(self.key ^ 3, page);
        part + self.partitions * (h % u64::from(in_part)) as u32
    }

    /// A uniform number for a property of an object. Pages (directly
    /// requested objects) take it from a Weyl sequence over their sequence
    /// number, one irrational step per property (rationally independent,
    /// so the properties are jointly equidistributed): any run of
    /// consecutive objects has its shares almost exactly, and a compressed
    /// run's small working set offers the nominal mix and hit ratio.
    /// Embedded objects use a hash.
    fn uniform(&self, oid: u64, property: Property) -> f64 {
        let (page, k) = split_oid(oid);
        let (salt, step) = match property {
            Property::Type => (6, 0.618_033_988_749_894_9), // golden ratio - 1
            Property::Cachable => (2, 0.414_213_562_373_095_1), // sqrt(2) - 1
            Property::Embeds => (8, 0.732_050_807_568_877_2), // sqrt(3) - 1
        };
        if k > 0 {
            return unit_f64(mix2(self.key ^ salt, oid));
        }
        let seq = page & ((1 << WORLD_SHIFT) - 1);
        let offset = unit_f64(mix2(self.key ^ salt, page >> WORLD_SHIFT));
        (offset + seq as f64 * step).fract()
    }

    fn type_of(&self, oid: u64) -> u16 {
        let (page, k) = split_oid(oid);
        let page_type = self.mix.direct_type(self.uniform(page, Property::Type));
        if k == 0 {
            page_type
        } else {
            self.mix.embed_of(page_type).unwrap_or(page_type)
        }
    }

    pub fn get(&self, oid: u64) -> ObjectInfo {
        // Independent hashes per property so they are uncorrelated.
        let h = |salt: u64| mix2(self.key ^ salt, oid);
        let ctype = self.type_of(oid);
        let t = &self.types[ctype as usize];
        let ext = (!t.extensions.is_empty()).then(|| {
            let u = unit_f64(h(7));
            let mut acc = 0.0;
            t.extensions
                .iter()
                .position(|e| {
                    acc += e.share;
                    u < acc
                })
                .unwrap_or(t.extensions.len() - 1) as u16
        });
        let (page, k) = split_oid(oid);
        let embeds = match (&t.embeds, k) {
            (Some(e), 0) => {
                let u = self.uniform(oid, Property::Embeds);
                (e.count.sample_with(|| u) as u32).min(MAX_EMBEDDED)
            }
            _ => 0,
        };
        ObjectInfo {
            oid,
            ctype,
            ext,
            size: t.size.sample_hashed(h(1)).round() as u64,
            cachable: self.uniform(oid, Property::Cachable) < t.cachable,
            md5: unit_f64(h(9)) < t.md5,
            embeds,
            server: self.server_of(page),
            body_seed: h(4),
            life_seed: h(5),
        }
    }

    /// The object's `Last-Modified` and `Expires` at `now` (Unix seconds)
    /// in a world that began at `epoch`.
    pub fn times(&self, o: &ObjectInfo, epoch: f64, now: f64) -> ObjectTimes {
        self.types[o.ctype as usize]
            .life_cycle
            .times(o.life_seed, epoch, now)
    }

    /// `Content-Type` of the object's responses.
    pub fn mime(&self, o: &ObjectInfo) -> &str {
        &self.types[o.ctype as usize].mime
    }

    /// The same objects under URLs naming run `run` (a per-run nonce).
    pub fn for_run(mut self, run: u32) -> ObjectSpace {
        self.run = run;
        self
    }

    /// Appends the object's URL path:
    /// `/cacheoff/<run: 8 hex digits>/<object id: 16 hex digits><ext>`.
    pub fn write_path(&self, out: &mut String, o: &ObjectInfo) {
        use std::fmt::Write;
        let _ = write!(out, "{URL_PREFIX}{:08x}/{:016x}", self.run, o.oid);
        if let Some(e) = o.ext {
            out.push_str(&self.types[o.ctype as usize].extensions[e as usize].ext);
        }
    }

    /// The object a URL path names, if the path is exactly the object's
    /// in this run.
    pub fn parse_path(&self, path: &str) -> Option<ObjectInfo> {
        let rest = path.strip_prefix(URL_PREFIX)?;
        let hex = rest.get(9..25)?;
        let oid = u64::from_str_radix(hex, 16).ok()?;
        let info = self.get(oid);
        let mut canonical = String::with_capacity(path.len());
        self.write_path(&mut canonical, &info);
        (canonical == path).then_some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{Embeds, Extension};
    use crate::{Dist, LifeCycle, Quantity};

    fn one_type() -> Vec<ContentType> {
        vec![ContentType::single(
            "obj",
            Dist::exp(Quantity::Size, 13.0 * 1024.0),
            0.8,
            LifeCycle::static_two_years(),
        )]
    }

    #[test]
    fn properties_depend_on_id_only_and_match_shares() {
        let types = one_type();
        let a = ObjectSpace::new(5, &types, 10, 1);
        let b = ObjectSpace::new(5, &types, 10, 1);
        let n = 100_000u64;
        let mut cachable = 0;
        let mut size = 0u64;
        let mut per_server = [0u32; 10];
        for oid in 0..n {
            let o = a.get(oid);
            assert_eq!(o, b.get(oid));
            cachable += u64::from(o.cachable);
            size += o.size;
            per_server[o.server as usize] += 1;
        }
        let share = cachable as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.0001, "cachable share {share}");
        // Any run of consecutive objects has the share too.
        let run = (5000..7000).filter(|o| a.get(*o).cachable).count();
        assert!((run as f64 / 2000.0 - 0.8).abs() < 0.002, "{run}");
        let mean = size as f64 / n as f64;
        assert!(
            (mean / (13.0 * 1024.0) - 1.0).abs() < 0.02,
            "mean size {mean}"
        );
        assert!(per_server.iter().all(|&c| c > 9_000 && c < 11_000));
        // Partitioned: world w's objects stay on servers i with i % 3 == w % 3.
        let p = ObjectSpace::new(5, &types, 10, 3);
        for world in 0..6u64 {
            for seq in 0..1000 {
                let o = p.get(world << WORLD_SHIFT | seq);
                assert_eq!(u64::from(o.server) % 3, world % 3);
                assert!(o.server < 10);
            }
        }
        // Another seed gives another universe.
        let c = ObjectSpace::new(6, &types, 10, 1);
        assert!((0..100).any(|oid| c.get(oid) != a.get(oid)));
    }

    #[test]
    fn type_and_cachability_are_independent_draws() {
        let types = crate::content_set("polymix").unwrap();
        let s = ObjectSpace::new(3, &types, 10, 1);
        let mut count = [0u32; 4];
        let mut cachable = [0u32; 4];
        for seq in 0..200_000u64 {
            let o = s.get(seq);
            count[o.ctype as usize] += 1;
            cachable[o.ctype as usize] += u32::from(o.cachable);
        }
        for (i, t) in types.iter().enumerate() {
            if t.embedded_only {
                assert_eq!(count[i], 0);
                continue;
            }
            let share = f64::from(count[i]) / 200_000.0;
            assert!(
                (share - t.share / 0.35).abs() < 0.002,
                "{} share {share}",
                t.name
            );
            let c = f64::from(cachable[i]) / f64::from(count[i]);
            assert!((c - t.cachable).abs() < 0.02, "{} cachable {c}", t.name);
        }
    }

    #[test]
    fn pages_embed_objects_of_their_embedded_type_on_the_same_server() {
        let mut page = ContentType::single(
            "html",
            Dist::constant(Quantity::Size, 100.0),
            1.0,
            LifeCycle::default(),
        );
        page.share = 0.5;
        page.embeds = Some(Embeds {
            type_name: "image".into(),
            count: Dist::zipf(13),
        });
        page.extensions = vec![
            Extension {
                ext: ".html".into(),
                share: 0.6,
            },
            Extension {
                ext: ".htm".into(),
                share: 0.4,
            },
        ];
        let mut image = ContentType::single(
            "image",
            Dist::constant(Quantity::Size, 7.0),
            1.0,
            LifeCycle::default(),
        );
        image.embedded_only = true;
        let mut other = ContentType::single(
            "other",
            Dist::constant(Quantity::Size, 9.0),
            1.0,
            LifeCycle::default(),
        );
        other.share = 0.5;
        let types = vec![page, image, other.clone()];
        let s = ObjectSpace::new(1, &types, 50, 2);
        let mut pages = 0;
        let mut embedded = 0u64;
        let mut html_ext = 0;
        for seq in 0..20_000u64 {
            let o = s.get(1 << WORLD_SHIFT | seq);
            assert_ne!(o.ctype, 1, "images are never requested directly");
            if o.ctype == 0 {
                pages += 1;
                embedded += u64::from(o.embeds);
                html_ext += usize::from(o.ext == Some(0));
                for k in 1..=o.embeds {
                    let e = s.get(embedded_oid(o.oid, k));
                    assert_eq!((e.ctype, e.size, e.server), (1, 7, o.server));
                    assert_eq!(split_oid(e.oid), (o.oid, k));
                }
            }
            let mut path = String::new();
            s.write_path(&mut path, &o);
            assert_eq!(s.parse_path(&path), Some(o));
            assert_eq!(s.parse_path(&format!("{path}x")), None);
            // Another run's URL for the same object is not this run's.
            let other = s.clone().for_run(7);
            assert_eq!(other.parse_path(&path), None);
            let mut theirs = String::new();
            other.write_path(&mut theirs, &o);
            assert_ne!(theirs, path);
            assert_eq!(other.parse_path(&theirs), Some(o));
        }
        let share = f64::from(pages) / 20_000.0;
        assert!((share - 0.5).abs() < 0.015, "page share {share}");
        let mean = embedded as f64 / f64::from(pages);
        assert!((mean - 4.45).abs() < 0.15, "embedded per page {mean}");
        let html = html_ext as f64 / f64::from(pages);
        assert!((html - 0.6).abs() < 0.02, ".html share {html}");
        let mix = Mix::new(&types).unwrap();
        assert!((mix.embedded_per_direct(&types) - 0.5 * Dist::zipf(13).mean()).abs() < 1e-9);
    }

    #[test]
    fn polymix_objects_have_the_specified_sizes_and_cachability() {
        // workloads.md: image exp(4.5KB) 80%, HTML exp(8.5KB) 90%,
        // download logn(300KB,300KB) 95%, other logn(25KB,10KB) 72%.
        let types = crate::content_set("polymix").unwrap();
        let s = ObjectSpace::new(3, &types, 100, 2);
        let n = types.len();
        let (mut count, mut bytes, mut cachable) = (vec![0u64; n], vec![0f64; n], vec![0u64; n]);
        let mut note = |o: ObjectInfo| {
            let t = usize::from(o.ctype);
            count[t] += 1;
            bytes[t] += o.size as f64;
            cachable[t] += u64::from(o.cachable);
        };
        for seq in 0..400_000u64 {
            let o = s.get(1 << WORLD_SHIFT | seq);
            note(o);
            for k in 1..=o.embeds {
                note(s.get(embedded_oid(o.oid, k)));
            }
        }
        for (t, ty) in types.iter().enumerate() {
            let mean = bytes[t] / count[t] as f64;
            let want = ty.size.mean();
            // 3% for the rare downloads (~10k objects of a wide lognormal),
            // 1% for the rest.
            let tol = if ty.name == "download" { 0.03 } else { 0.01 };
            assert!(
                (mean / want - 1.0).abs() < tol,
                "{}: mean {mean} vs {want} over {}",
                ty.name,
                count[t]
            );
            let c = cachable[t] as f64 / count[t] as f64;
            assert!((c - ty.cachable).abs() < 0.01, "{}: cachable {c}", ty.name);
        }
    }
}
