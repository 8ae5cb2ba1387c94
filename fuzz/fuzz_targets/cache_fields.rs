//! The cache's readings of header fields: `Cache-Control` (and targeted
//! fields), `Age`, `Vary`, entity tags and their lists, conditionals. The
//! input is two header blocks (a response's, then after a blank line a
//! request's), one `Name: value` per line, so repeated and listed fields
//! come naturally. Beyond "never panics": a variant always answers the
//! request it was stored for (unless `Vary: *`), a parsed entity tag is
//! equal to itself, and ages stay within the delta-seconds cap.
#![no_main]

use cacheoff_cache::control::MAX_DELTA;
use cacheoff_cache::freshness::age_value;
use cacheoff_cache::validators::{not_modified, EntityTag, TagList};
use cacheoff_cache::{reuse, storable_with, Directives, Freshness, Targeted, Variant};
use libfuzzer_sys::fuzz_target;

fn fields(block: &[u8]) -> Vec<(&str, &[u8])> {
    block
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let i = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..i]).ok()?.trim();
            (!name.is_empty()).then(|| (name, line[i + 1..].trim_ascii()))
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let response = fields(&data[..split]);
    let request = fields(data.get(split + 2..).unwrap_or_default());
    let (resp, req) = (response.iter().copied(), request.iter().copied());

    let t0 = 1_800_000_000;
    for targeted in [Targeted::none(), Targeted::cdn()] {
        let fresh = Freshness::of_response(200, resp.clone(), t0, t0 + 1, &targeted);
        assert!(fresh.age <= MAX_DELTA, "age {}", fresh.age);
        let _ = fresh.is_fresh(t0 + 10);
        let _ = storable_with(200, req.clone(), resp.clone(), false, &targeted);
        let _ = reuse(&Directives::parse(req.clone()), &fresh, t0 + 100);
        let _ = targeted.strip_downstream(resp.clone());
    }
    for (_, v) in response
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("age"))
    {
        if let Some(a) = age_value(v) {
            assert!(a <= MAX_DELTA);
        }
    }
    if let Some(variant) = Variant::of(resp.clone(), req.clone()) {
        assert_eq!(variant.matches(req.clone()), !variant.any, "{variant:?}");
    }
    for (_, v) in &response {
        if let Some(tag) = EntityTag::parse(v) {
            assert!(tag.weak_eq(&tag));
            assert_eq!(tag.strong_eq(&tag), !tag.weak);
        }
        let _ = TagList::parse(v);
    }
    let etag = response
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
        .and_then(|(_, v)| EntityTag::parse(v));
    let _ = not_modified(req, 200, etag.as_ref(), Some(t0));
});
