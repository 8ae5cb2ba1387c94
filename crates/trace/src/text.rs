//! The line formats: Squid's native log, CLF/Combined and the Wikimedia
//! TSV, one pure function per line, plus the small parsers they share
//! (URLs into key and site, decimal times, CLF dates). Times here are
//! absolute; the reader rebases them.

use crate::error::LineError;
use crate::{cachable_by_default, hash_bytes, Method, Record};

/// A record before rebasing, with its time as traced.
pub(crate) fn record(time_us: u64, key: u64, size: u64) -> Record {
    Record {
        time_us,
        key,
        site: 0,
        client: 0,
        size,
        ttfb_us: None,
        elapsed_us: None,
        method: Method::Get,
        status: None,
        cachable: None,
        next_access_vtime: None,
    }
}

/// The key and site of a URL. An absolute URL is keyed by its scheme,
/// host (with port, without user info) and path with query, the scheme and
/// host lowercased; a path alone by itself, with no site; the fragment is
/// never part of it.
pub fn url_key(url: &str) -> (u64, u64) {
    let url = url.split('#').next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else {
        return (hash_bytes(url.as_bytes()), 0);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.to_ascii_lowercase();
    let path = match &rest[end..] {
        "" => "/",
        p => p,
    };
    let full = format!("{}://{host}{path}", scheme.to_ascii_lowercase());
    let site = if host.is_empty() {
        0
    } else {
        hash_bytes(host.as_bytes())
    };
    (hash_bytes(full.as_bytes()), site)
}

/// A non-negative decimal time (`1700000000.123`, `12`, `0.5`, also
/// `1.5e3`) in `unit_us` microseconds per unit, to whole microseconds.
pub fn parse_time(s: &str, unit_us: u64) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty()) {
        let whole = if int.is_empty() {
            0
        } else {
            int.parse::<u64>().ok()?
        };
        let mut value = whole.checked_mul(unit_us)?;
        // The fraction's first digits down to microseconds, truncated.
        let mut scale = unit_us;
        for b in frac.bytes() {
            scale /= 10;
            if scale == 0 {
                break;
            }
            value = value.checked_add(u64::from(b - b'0') * scale)?;
        }
        return Some(value);
    }
    let f: f64 = s.parse().ok()?;
    let us = f * unit_us as f64;
    (f.is_finite() && f >= 0.0 && us < 1.8e19).then_some(us as u64)
}

fn number(column: usize, name: &str, s: &str) -> Result<u64, LineError> {
    s.parse()
        .map_err(|_| LineError::field(column, name, "is not a number", s))
}

fn time(column: usize, name: &str, s: &str, unit_us: u64) -> Result<u64, LineError> {
    parse_time(s, unit_us).ok_or_else(|| LineError::field(column, name, "is not a time", s))
}

/// Squid's native format: `time.ms elapsed client code/status bytes method
/// URL ident hierarchy/from type` (the last three may be missing).
pub(crate) fn squid(line: &str) -> Result<Record, LineError> {
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    if f.len() < 7 {
        return Err(LineError::msg(format!(
            "{} fields where Squid's log has 10 (time elapsed client code/status bytes method URL ...)",
            f.len()
        )));
    }
    let t = time(1, "time", f[0], 1_000_000)?;
    let elapsed = number(2, "elapsed", f[1])?;
    let status = f[3]
        .rsplit_once('/')
        .and_then(|(_, s)| s.parse::<u16>().ok())
        .ok_or_else(|| LineError::field(4, "code/status", "is not CODE/STATUS", f[3]))?;
    let size = number(5, "size", f[4])?;
    let method = Method::parse(f[5]);
    let (key, site) = url_key(f[6]);
    let mut r = record(t, key, size);
    r.site = site;
    r.client = hash_bytes(f[2].as_bytes());
    r.elapsed_us = Some(elapsed.saturating_mul(1000));
    r.method = method;
    r.status = Some(status);
    r.cachable = Some(cachable_by_default(method, Some(status)));
    Ok(r)
}

/// Common or Combined Log Format: `host ident authuser [date] "request"
/// status bytes` and, for Combined, `"referer" "agent"` (ignored).
pub(crate) fn clf(line: &str) -> Result<Record, LineError> {
    let mut rest = line.trim_start();
    let mut head = [""; 3];
    for h in &mut head {
        let end = rest.find([' ', '\t']).unwrap_or(rest.len());
        *h = &rest[..end];
        rest = rest[end..].trim_start();
    }
    let date = rest
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .ok_or_else(|| LineError::field(4, "date", "is not [date]", rest))?;
    let t = clf_date(date.0).ok_or_else(|| LineError::field(4, "date", "is not a date", date.0))?;
    rest = date.1.trim_start();
    let request = rest
        .strip_prefix('"')
        .and_then(quoted)
        .ok_or_else(|| LineError::field(5, "request", "is not a quoted request", rest))?;
    rest = request.1.trim_start();
    let mut words = request.0.split_ascii_whitespace();
    let (method, url) = match (words.next(), words.next()) {
        (Some(m), Some(u)) => (Method::parse(m), u),
        (Some(u), None) => (Method::Other, u),
        _ => return Err(LineError::field(5, "request", "is empty", request.0)),
    };
    let mut tail = rest.split_ascii_whitespace();
    let status = match tail.next() {
        None => return Err(LineError::msg("no status after the request (field 6)")),
        Some("-") => None,
        Some(s) => Some(
            s.parse::<u16>()
                .map_err(|_| LineError::field(6, "status", "is not a status", s))?,
        ),
    };
    let size = match tail.next() {
        None => return Err(LineError::msg("no size after the status (field 7)")),
        Some("-") => 0,
        Some(s) => number(7, "size", s)?,
    };
    let (key, site) = url_key(url);
    let mut r = record(t, key, size);
    r.site = site;
    r.client = hash_bytes(head[0].as_bytes());
    r.method = method;
    r.status = status;
    r.cachable = Some(cachable_by_default(method, status));
    Ok(r)
}

/// The inside of a `"..."` (after the opening quote) and what follows it;
/// a backslash escapes the next character.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// `10/Oct/2000:13:55:36 -0700` as microseconds since the Unix epoch.
pub(crate) fn clf_date(s: &str) -> Option<u64> {
    let (when, zone) = s.split_once(' ').unwrap_or((s, "+0000"));
    let mut p = when.splitn(4, [':', '/']);
    let day: i64 = p.next()?.parse().ok()?;
    let mon = p.next()?;
    let month = MONTHS.iter().position(|m| *m == mon)? as i64 + 1;
    let year: i64 = p.next()?.parse().ok()?;
    let mut hms = p.next()?.split(':');
    let mut part = |max: i64| -> Option<i64> {
        let v: i64 = hms.next()?.parse().ok()?;
        (0..=max).contains(&v).then_some(v)
    };
    let (h, m, sec) = (part(23)?, part(59)?, part(60)?);
    let zone = zone.trim();
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = zone.get(1..)?;
    if digits.len() != 4 || !(1..=31).contains(&day) || !(1..=9999).contains(&year) {
        return None;
    }
    let offset = digits.parse::<i64>().ok()?;
    let offset = sign * (offset / 100 * 3600 + offset % 100 * 60);
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec - offset;
    u64::try_from(secs).ok().map(|s| s * 1_000_000)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 of a proleptic Gregorian date (eras of 400 years).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Wikimedia's column names, as in the published files' header.
pub(crate) const WIKIMEDIA_HEADER: [&str; 5] = [
    "relative_unix",
    "hashed_path_query",
    "image_type",
    "response_size",
    "time_firstbyte",
];

pub(crate) fn is_wikimedia_header(line: &str) -> bool {
    line.split('\t').next() == Some(WIKIMEDIA_HEADER[0])
}

/// The Wikimedia CDN 2019 TSV: `relative_unix hashed_path_query
/// image_type response_size time_firstbyte`.
pub(crate) fn wikimedia(line: &str) -> Result<Record, LineError> {
    let f: Vec<&str> = line.split('\t').map(str::trim).collect();
    if f.len() != 5 {
        return Err(LineError::msg(format!(
            "{} tab-separated fields where the Wikimedia trace has 5 ({})",
            f.len(),
            WIKIMEDIA_HEADER.join(" ")
        )));
    }
    let t = time(1, WIKIMEDIA_HEADER[0], f[0], 1_000_000)?;
    let key = f[1]
        .parse::<u64>()
        .or_else(|_| f[1].parse::<i64>().map(|k| k as u64))
        .map_err(|_| LineError::field(2, WIKIMEDIA_HEADER[1], "is not an integer", f[1]))?;
    let size = number(4, WIKIMEDIA_HEADER[3], f[3])?;
    let ttfb = time(5, WIKIMEDIA_HEADER[4], f[4], 1_000_000)?;
    let mut r = record(t, key, size);
    r.ttfb_us = Some(ttfb);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_exact_decimals() {
        assert_eq!(
            parse_time("1700000000.123", 1_000_000),
            Some(1_700_000_000_123_000)
        );
        assert_eq!(parse_time("0.0000019", 1_000_000), Some(1));
        assert_eq!(parse_time("12", 1000), Some(12_000));
        assert_eq!(parse_time("1.5", 1000), Some(1500));
        assert_eq!(parse_time("7", 1), Some(7));
        assert_eq!(parse_time("7.9", 1), Some(7));
        assert_eq!(parse_time(".5", 1_000_000), Some(500_000));
        assert_eq!(parse_time("1e3", 1), Some(1000));
        for bad in [
            "",
            ".",
            "-1",
            "1..2",
            "x",
            "99999999999999999999",
            "inf",
            "NaN",
        ] {
            assert_eq!(parse_time(bad, 1_000_000), None, "{bad}");
        }
    }

    #[test]
    fn clf_dates_with_zones() {
        // 2000-10-10 20:55:36 UTC.
        assert_eq!(
            clf_date("10/Oct/2000:13:55:36 -0700"),
            Some(971_211_336_000_000)
        );
        assert_eq!(clf_date("01/Jan/1970:00:00:00 +0000"), Some(0));
        assert_eq!(
            clf_date("29/Feb/2024:12:00:00 +0100"),
            Some(1_709_204_400_000_000)
        );
        assert_eq!(clf_date("01/Jan/1970:00:00:00 +0100"), None);
        assert_eq!(clf_date("10/Foo/2000:13:55:36 -0700"), None);
        assert_eq!(clf_date("10/Oct/2000:25:55:36 -0700"), None);
    }

    #[test]
    fn urls_key_by_scheme_host_path_and_query() {
        let (k, s) = url_key("http://Example.com/a.gif?x=1#frag");
        assert_eq!(k, hash_bytes(b"http://example.com/a.gif?x=1"));
        assert_eq!(s, hash_bytes(b"example.com"));
        assert_eq!(
            url_key("HTTP://user@example.com").0,
            hash_bytes(b"http://example.com/")
        );
        assert_eq!(url_key("/a.gif"), (hash_bytes(b"/a.gif"), 0));
        assert_ne!(url_key("http://a/x").1, url_key("http://a:8080/x").1);
    }

    #[test]
    fn squid_line() {
        let r = squid("1700000000.123    45 10.0.0.1 TCP_MISS/200 13312 GET http://example.com/a.gif - HIER_DIRECT/10.1.1.1 image/gif").unwrap();
        assert_eq!(r.time_us, 1_700_000_000_123_000);
        assert_eq!(r.elapsed_us, Some(45_000));
        assert_eq!(r.size, 13312);
        assert_eq!(r.status, Some(200));
        assert_eq!(r.cachable, Some(true));
        assert_eq!(r.client, hash_bytes(b"10.0.0.1"));
        assert_eq!(r.site, hash_bytes(b"example.com"));
        let r = squid("1700000000.123 45 10.0.0.1 TCP_MISS/302 0 GET http://e/ - HIER_DIRECT/x -")
            .unwrap();
        assert_eq!(r.cachable, Some(false));
        let r = squid("1700000000.123 45 10.0.0.1 TCP_HIT/200 5 POST http://e/ - HIER_NONE/- -")
            .unwrap();
        assert_eq!((r.method, r.cachable), (Method::Post, Some(false)));
    }

    #[test]
    fn clf_and_combined_lines() {
        let r = clf(r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#).unwrap();
        assert_eq!(r.time_us, 971_211_336_000_000);
        assert_eq!((r.key, r.site), (hash_bytes(b"/apache_pb.gif"), 0));
        assert_eq!(
            (r.status, r.size, r.cachable),
            (Some(200), 2326, Some(true))
        );
        let r = clf(r#"h - - [10/Oct/2000:13:55:36 -0700] "HEAD http://x.org/q\"x HTTP/1.1" 304 - "http://ref/" "Mozilla/5.0 (X11)""#).unwrap();
        assert_eq!((r.method, r.status, r.size), (Method::Head, Some(304), 0));
        assert_eq!(r.site, hash_bytes(b"x.org"));
        assert_eq!(r.cachable, Some(false));
        let r = clf(r#"h - - [10/Oct/2000:13:55:36 -0700] "-" 408 -"#).unwrap();
        assert_eq!((r.method, r.cachable), (Method::Other, Some(false)));
    }

    #[test]
    fn wikimedia_line() {
        let r = wikimedia("17\t-8290165497003548591\tjpeg\t12345\t0.012").unwrap();
        assert_eq!(r.time_us, 17_000_000);
        assert_eq!(r.key, -8290165497003548591i64 as u64);
        assert_eq!((r.size, r.ttfb_us, r.cachable), (12345, Some(12_000), None));
        assert!(is_wikimedia_header(&WIKIMEDIA_HEADER.join("\t")));
    }
}
