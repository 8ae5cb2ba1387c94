//! A proxy's reply against the Collector's: the first [`Mismatch`] that
//! applies, with its one-line "expected ...; got ..." detail. Headers that
//! legitimately differ between caches (Date, Age, Via, X-Cache,
//! Cache-Status, hop-by-hop fields, the stamp, Server) are never looked at:
//! only the facts in [`Facts`] are.

use crate::facts::Facts;
use cacheoff_rundir::spe::Mismatch;

/// The first mismatch of `got` (the proxy's reply) against `expected`
/// (the Collector's), in order: status, truncation, staleness, another
/// object or corrupt bytes, validators, freshness.
pub fn compare(expected: &Facts, got: &Facts) -> Option<(Mismatch, String)> {
    if got.status != expected.status {
        return Some((
            Mismatch::WrongStatus,
            format!("expected status {}; got {}", expected.status, got.status),
        ));
    }
    let not_modified = expected.status == 304;
    if !not_modified && (!got.complete || got.body_len < expected.body_len) {
        let how = if got.complete { "" } else { ", ended early" };
        return Some((
            Mismatch::Truncated,
            format!(
                "expected {} body bytes; got {}{how}",
                expected.body_len, got.body_len
            ),
        ));
    }
    let lm = |f: &Facts| {
        f.last_modified
            .as_deref()
            .and_then(|v| cacheoff_http::date::parse(v.as_bytes()))
    };
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    if let (Some(e), Some(g)) = (lm(expected), lm(got)) {
        if g < e {
            return Some((
                Mismatch::Stale,
                format!(
                    "expected Last-Modified {}; got {}",
                    show(&expected.last_modified),
                    show(&got.last_modified)
                ),
            ));
        }
    }
    // A 304 must repeat the ETag but need not repeat Last-Modified (RFC
    // 9110 §15.4.5): its Last-Modified is held to the Collector's only
    // when it states one.
    let same_lm = lm(got) == lm(expected) || (not_modified && lm(got).is_none());
    let same_validators = got.etag == expected.etag && same_lm;
    if !not_modified && (got.body_len != expected.body_len || got.digest != expected.digest) {
        let kind = if got.body_len == expected.body_len && same_validators {
            Mismatch::CorruptBody
        } else {
            Mismatch::DifferentObject
        };
        return Some((
            kind,
            format!(
                "expected {} bytes digest {:08x}; got {} bytes digest {:08x}",
                expected.body_len,
                expected.digest >> 96,
                got.body_len,
                got.digest >> 96
            ),
        ));
    }
    if !same_validators {
        return Some((
            Mismatch::Validators,
            format!(
                "expected ETag {} Last-Modified {}; got ETag {} Last-Modified {}",
                show(&expected.etag),
                show(&expected.last_modified),
                show(&got.etag),
                show(&got.last_modified)
            ),
        ));
    }
    if not_modified {
        return None;
    }
    let expires = |f: &Facts| {
        f.expires
            .as_deref()
            .map(|v| cacheoff_http::date::parse(v.as_bytes()).ok_or(v.trim().to_string()))
    };
    if expires(got) != expires(expected) || directives(got) != directives(expected) {
        return Some((
            Mismatch::Freshness,
            format!(
                "expected Expires {} Cache-Control {}; got Expires {} Cache-Control {}",
                show(&expected.expires),
                show(&expected.cache_control),
                show(&got.expires),
                show(&got.cache_control)
            ),
        ));
    }
    None
}

/// `Cache-Control` directives, lower-cased, without spaces, sorted: the
/// same policy written another way is the same.
fn directives(f: &Facts) -> Vec<String> {
    let mut v: Vec<String> = f
        .cache_control
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(|d| {
            d.chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect::<String>()
                .to_ascii_lowercase()
        })
        .filter(|d| !d.is_empty())
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const LM: &str = "Sun, 22 Nov 2026 00:00:00 GMT";
    const OLDER: &str = "Sat, 21 Nov 2026 00:00:00 GMT";

    fn facts() -> Facts {
        Facts {
            status: 200,
            body_len: 100,
            digest: 0xabc << 96,
            complete: true,
            last_modified: Some(LM.into()),
            etag: Some("\"v1\"".into()),
            expires: None,
            cache_control: Some("max-age=60, public".into()),
        }
    }

    fn kind(got: Facts) -> Option<Mismatch> {
        compare(&facts(), &got).map(|(k, _)| k)
    }

    #[test]
    fn the_same_reply_matches_and_hop_fields_are_not_facts() {
        assert_eq!(compare(&facts(), &facts()), None);
        let reordered = Facts {
            cache_control: Some("public,MAX-AGE=60".into()),
            ..facts()
        };
        assert_eq!(kind(reordered), None);
    }

    #[test]
    fn each_kind_in_its_order() {
        let f = facts;
        assert_eq!(
            kind(Facts { status: 404, ..f() }),
            Some(Mismatch::WrongStatus)
        );
        let (k, detail) = compare(&f(), &Facts { status: 502, ..f() }).unwrap();
        assert_eq!(
            (k, detail.as_str()),
            (Mismatch::WrongStatus, "expected status 200; got 502")
        );
        assert_eq!(
            kind(Facts {
                body_len: 40,
                ..f()
            }),
            Some(Mismatch::Truncated)
        );
        assert_eq!(
            kind(Facts {
                complete: false,
                ..f()
            }),
            Some(Mismatch::Truncated)
        );
        let stale = Facts {
            last_modified: Some(OLDER.into()),
            digest: 1,
            ..f()
        };
        assert_eq!(kind(stale), Some(Mismatch::Stale));
        assert_eq!(
            kind(Facts { digest: 1, ..f() }),
            Some(Mismatch::CorruptBody)
        );
        let other = Facts {
            body_len: 120,
            digest: 1,
            ..f()
        };
        assert_eq!(kind(other), Some(Mismatch::DifferentObject));
        let retagged = Facts {
            etag: Some("\"v2\"".into()),
            digest: 1,
            ..f()
        };
        assert_eq!(kind(retagged), Some(Mismatch::DifferentObject));
        let etag_only = Facts {
            etag: Some("\"v2\"".into()),
            ..f()
        };
        assert_eq!(kind(etag_only), Some(Mismatch::Validators));
        let cc = Facts {
            cache_control: Some("no-store".into()),
            ..f()
        };
        assert_eq!(kind(cc), Some(Mismatch::Freshness));
        let exp = Facts {
            expires: Some(LM.into()),
            ..f()
        };
        assert_eq!(kind(exp), Some(Mismatch::Freshness));
    }

    #[test]
    fn not_modified_compares_status_and_validators_only() {
        let nm = Facts {
            status: 304,
            body_len: 0,
            digest: 0,
            ..facts()
        };
        let got = Facts {
            cache_control: None,
            digest: 5,
            ..nm.clone()
        };
        assert_eq!(compare(&nm, &got), None);
        let older = Facts {
            last_modified: Some(OLDER.into()),
            ..nm.clone()
        };
        assert_eq!(compare(&nm, &older).map(|m| m.0), Some(Mismatch::Stale));
        let tag = Facts {
            etag: None,
            ..nm.clone()
        };
        assert_eq!(compare(&nm, &tag).map(|m| m.0), Some(Mismatch::Validators));
        // Without Last-Modified a 304 is still right (RFC 9110 §15.4.5).
        let bare = Facts {
            last_modified: None,
            ..nm.clone()
        };
        assert_eq!(compare(&nm, &bare), None);
    }
}
