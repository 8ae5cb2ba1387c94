//! The object universe: every property of an object follows from its id.
//!
//! As in Web Polygraph, objects live in worlds: one per client host (its
//! galaxy, see [`crate::Galaxy`]), origin server and directly requested
//! content type, each a sequence of names 0, 1, 2, ... An object id packs
//! them (low bits first): the name (29 bits), the content type (3), the
//! server (13), the galaxy (12) and the index of an embedded object within
//! its page (7; 0 for pages and other directly requested objects). An
//! embedded object lives on its page's server.

use crate::content::{ContentType, Mix};
use crate::lifecycle::ObjectTimes;
use cacheoff_base::rng::{key, mix2, unit_f64, Stream};
use std::sync::Arc;

const NAME_BITS: u32 = 29;
const TYPE_SHIFT: u32 = NAME_BITS;
const SERVER_SHIFT: u32 = TYPE_SHIFT + 3;
const GALAXY_SHIFT: u32 = SERVER_SHIFT + 13;
const EMBED_SHIFT: u32 = GALAXY_SHIFT + 12;
/// Most content types a workload can have.
pub const MAX_TYPES: usize = 1 << 3;
/// Most origin servers a workload can have.
pub const MAX_SERVERS: u32 = 1 << 13;
/// Distinct galaxies (client hosts x workers) that object ids can name.
pub const MAX_GALAXIES: usize = 1 << 12;
/// Most embedded objects per page.
pub const MAX_EMBEDDED: u32 = 127;
/// Names a world can hand out before ids would collide.
pub const MAX_NAMES: u64 = 1 << NAME_BITS;
const URL_PREFIX: &str = "/cacheoff/";

/// Where an object lives: its world (galaxy, server, content type) and
/// its name there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub galaxy: u32,
    pub server: u32,
    /// Index of the directly requested content type.
    pub ctype: u16,
    pub name: u64,
}

impl Place {
    /// The id of the directly requested object at this place.
    pub fn oid(self) -> u64 {
        u64::from(self.galaxy) << GALAXY_SHIFT
            | u64::from(self.server) << SERVER_SHIFT
            | u64::from(self.ctype) << TYPE_SHIFT
            | (self.name & (MAX_NAMES - 1))
    }

    /// The place of an object (of its page, for an embedded object).
    pub fn of(oid: u64) -> Place {
        let field = |shift: u32, bits: u32| (oid >> shift) & ((1 << bits) - 1);
        Place {
            galaxy: field(GALAXY_SHIFT, 12) as u32,
            server: field(SERVER_SHIFT, 13) as u32,
            ctype: field(TYPE_SHIFT, 3) as u16,
            name: field(0, NAME_BITS),
        }
    }
}

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
    /// An object of a replayed trace ([`ObjectSpace::traced`]): its URL
    /// names its key, size and cachability instead of a place.
    pub traced: bool,
}

/// Maps object ids to [`ObjectInfo`]; cheap to clone and share read-only.
#[derive(Debug, Clone)]
pub struct ObjectSpace {
    key: u64,
    /// Names this run in every URL, so no cache can answer one run's
    /// request with another run's object.
    run: u32,
    types: Arc<[ContentType]>,
    mix: Arc<Mix>,
}

impl ObjectSpace {
    /// The content types must pass [`Mix::new`] (workload validation
    /// checks that).
    pub fn new(seed: u64, types: &[ContentType]) -> ObjectSpace {
        ObjectSpace {
            key: key(seed, Stream::Objects),
            run: 0,
            mix: Arc::new(Mix::new(types).expect("validated content types")),
            types: types.into(),
        }
    }

    pub fn mix(&self) -> &Mix {
        &self.mix
    }

    pub fn types(&self) -> &[ContentType] {
        &self.types
    }

    /// A uniform number for a property of an object. Pages (directly
    /// requested objects) take it from a Weyl sequence over their name in
    /// their world, one irrational step per property (rationally
    /// independent, so the properties are jointly equidistributed): any run
    /// of consecutive objects of a world has its shares almost exactly.
    /// Embedded objects use a hash.
    fn uniform(&self, oid: u64, property: Property) -> f64 {
        let (page, k) = split_oid(oid);
        let (salt, step) = match property {
            Property::Cachable => (2, 0.414_213_562_373_095_1), // sqrt(2) - 1
            Property::Embeds => (8, 0.732_050_807_568_877_2),   // sqrt(3) - 1
        };
        if k > 0 {
            return unit_f64(mix2(self.key ^ salt, oid));
        }
        let name = Place::of(page).name;
        let offset = unit_f64(mix2(self.key ^ salt, page >> NAME_BITS));
        (offset + name as f64 * step).fract()
    }

    fn type_of(&self, oid: u64) -> u16 {
        let (page, k) = split_oid(oid);
        let page_type = Place::of(page).ctype;
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
            server: Place::of(page).server,
            body_seed: h(4),
            life_seed: h(5),
            traced: false,
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

    /// A replayed trace's object: `key` on `server`, `size` bytes, of the
    /// first content type (a replay's workload has one). Properties that
    /// a trace does not give follow from the key.
    pub fn traced(&self, key: u64, size: u64, cachable: bool, server: u32) -> ObjectInfo {
        let h = |salt: u64| mix2(self.key ^ salt, key);
        ObjectInfo {
            oid: key,
            ctype: 0,
            ext: None,
            size,
            cachable,
            md5: false,
            embeds: 0,
            server,
            body_seed: h(4) ^ size,
            life_seed: h(5),
            traced: true,
        }
    }

    /// Appends the object's URL path:
    /// `/cacheoff/<run: 8 hex digits>/<object id: 16 hex digits><ext>`, or
    /// for a traced object
    /// `/cacheoff/<run>/t/<server>/<key: 16 hex digits>/<size>[u]` (`u`:
    /// uncachable), so the origin server needs no table of the trace.
    pub fn write_path(&self, out: &mut String, o: &ObjectInfo) {
        use std::fmt::Write;
        if o.traced {
            let u = if o.cachable { "" } else { "u" };
            let _ = write!(
                out,
                "{URL_PREFIX}{:08x}/t/{}/{:016x}/{}{u}",
                self.run, o.server, o.oid, o.size
            );
            return;
        }
        let _ = write!(out, "{URL_PREFIX}{:08x}/{:016x}", self.run, o.oid);
        if let Some(e) = o.ext {
            out.push_str(&self.types[o.ctype as usize].extensions[e as usize].ext);
        }
    }

    /// The object a URL path names, if the path is exactly the object's
    /// in this run.
    pub fn parse_path(&self, path: &str) -> Option<ObjectInfo> {
        let rest = path.strip_prefix(URL_PREFIX)?;
        if rest.get(8..11) == Some("/t/") {
            return self.parse_traced(path, &rest[11..]);
        }
        let hex = rest.get(9..25)?;
        let oid = u64::from_str_radix(hex, 16).ok()?;
        if usize::from(Place::of(oid).ctype) >= self.types.len() {
            return None;
        }
        let info = self.get(oid);
        // The object's own path, built in a reused buffer (this is every
        // origin response's path).
        thread_local!(static CANONICAL: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) });
        CANONICAL.with_borrow_mut(|canonical| {
            canonical.clear();
            self.write_path(canonical, &info);
            (canonical == path).then_some(info)
        })
    }
}

impl ObjectSpace {
    /// `rest`: `<server>/<key>/<size>[u]` of a traced object's `path`.
    fn parse_traced(&self, path: &str, rest: &str) -> Option<ObjectInfo> {
        let mut parts = rest.splitn(3, '/');
        let server = parts.next()?.parse().ok()?;
        let key = u64::from_str_radix(parts.next()?, 16).ok()?;
        let last = parts.next()?;
        let (size, cachable) = match last.strip_suffix('u') {
            Some(size) => (size, false),
            None => (last, true),
        };
        let info = self.traced(key, size.parse().ok()?, cachable, server);
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

    /// Object `name` of galaxy `g`'s world on `server` of type `ctype`.
    fn at(g: u32, server: u32, ctype: u16, name: u64) -> u64 {
        Place {
            galaxy: g,
            server,
            ctype,
            name,
        }
        .oid()
    }

    fn one_type() -> Vec<ContentType> {
        vec![ContentType::single(
            "obj",
            Dist::exp(Quantity::Size, 13.0 * 1024.0),
            0.8,
            LifeCycle::static_two_years(),
        )]
    }

    #[test]
    fn traced_objects_name_key_size_and_cachability_in_their_url() {
        let space = ObjectSpace::new(1, &one_type()).for_run(7);
        let o = space.traced(0xfeed, 13_312, false, 3);
        let mut path = String::new();
        space.write_path(&mut path, &o);
        assert_eq!(path, "/cacheoff/00000007/t/3/000000000000feed/13312u");
        assert_eq!(space.parse_path(&path), Some(o));
        let c = space.traced(0xfeed, 13_312, true, 3);
        assert_ne!(c.body_seed, space.traced(0xfeed, 13_313, true, 3).body_seed);
        let mut cp = String::new();
        space.write_path(&mut cp, &c);
        assert_eq!(space.parse_path(&cp), Some(c));
        for bad in [
            "/cacheoff/00000007/t/3/000000000000feed/x",
            "/cacheoff/00000007/t/3/feed/13312",
            "/cacheoff/00000007/t/3/000000000000feed/013312",
            "/cacheoff/00000008/t/3/000000000000feed/13312",
        ] {
            assert_eq!(space.parse_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn properties_depend_on_id_only_and_match_shares() {
        let types = one_type();
        let a = ObjectSpace::new(5, &types);
        let b = ObjectSpace::new(5, &types);
        let n = 100_000u64;
        let mut cachable = 0;
        let mut size = 0u64;
        for name in 0..n {
            let oid = at(3, 7, 0, name);
            let o = a.get(oid);
            assert_eq!(o, b.get(oid));
            assert_eq!(o.server, 7, "the server comes from the id");
            assert_eq!(Place::of(oid).name, name);
            cachable += u64::from(o.cachable);
            size += o.size;
        }
        let share = cachable as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.0001, "cachable share {share}");
        // Any run of consecutive objects of a world has the share too.
        let run = (5000..7000)
            .filter(|&k| a.get(at(3, 7, 0, k)).cachable)
            .count();
        assert!((run as f64 / 2000.0 - 0.8).abs() < 0.002, "{run}");
        // ...and so does a small world.
        let small = (0..50).filter(|&k| a.get(at(1, 2, 0, k)).cachable).count();
        assert!((39..=41).contains(&small), "{small} of 50");
        let mean = size as f64 / n as f64;
        assert!(
            (mean / (13.0 * 1024.0) - 1.0).abs() < 0.02,
            "mean size {mean}"
        );
        // Another seed gives another universe.
        let c = ObjectSpace::new(6, &types);
        assert!((0..100).any(|k| c.get(at(0, 0, 0, k)) != a.get(at(0, 0, 0, k))));
    }

    #[test]
    fn the_type_comes_from_the_id_and_bogus_ids_are_refused() {
        let types = crate::content_set("polymix").unwrap();
        let s = ObjectSpace::new(3, &types);
        for (i, t) in types.iter().enumerate() {
            let mut cachable = 0u32;
            for name in 0..10_000 {
                let o = s.get(at(0, 1, i as u16, name));
                assert_eq!(o.ctype, i as u16);
                cachable += u32::from(o.cachable);
            }
            let c = f64::from(cachable) / 10_000.0;
            assert!((c - t.cachable).abs() < 0.002, "{} cachable {c}", t.name);
        }
        // A URL naming a type the workload lacks names no object.
        let mut path = String::new();
        s.write_path(&mut path, &s.get(at(0, 1, 0, 5)));
        let bogus = path.replace(
            &format!("{:016x}", at(0, 1, 0, 5)),
            &format!("{:016x}", at(0, 1, 7, 5)),
        );
        assert_ne!(bogus, path);
        assert_eq!(s.parse_path(&bogus), None);
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
        let s = ObjectSpace::new(1, &types);
        let mut pages = 0;
        let mut embedded = 0u64;
        let mut html_ext = 0;
        for seq in 0..20_000u64 {
            let o = s.get(at(1, 9, if seq % 2 == 0 { 0 } else { 2 }, seq / 2));
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
        assert_eq!(pages, 10_000);
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
        let s = ObjectSpace::new(3, &types);
        let n = types.len();
        let mix = Mix::new(&types).unwrap();
        let (mut count, mut bytes, mut cachable) = (vec![0u64; n], vec![0f64; n], vec![0u64; n]);
        let mut note = |o: ObjectInfo| {
            let t = usize::from(o.ctype);
            count[t] += 1;
            bytes[t] += o.size as f64;
            cachable[t] += u64::from(o.cachable);
        };
        for seq in 0..400_000u64 {
            let ctype = mix.direct_type(((seq as f64) * 0.618_033_988_749_894_9).fract());
            let o = s.get(at(2, (seq % 100) as u32, ctype, seq / 100));
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
