//! HTTP dates (RFC 9110 §5.6.7) as Unix seconds: the one place that
//! formats and parses them.

use std::time::{Duration, UNIX_EPOCH};

/// The IMF-fixdate for `unix_secs` (dates before 1970 print as the epoch).
pub fn format(unix_secs: i64) -> String {
    let secs = u64::try_from(unix_secs).unwrap_or(0);
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Unix seconds of an HTTP date in any of the three forms; `None` if it is
/// not one (or lies before 1970).
pub fn parse(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    httpdate::parse_http_date(s.trim())
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_back() {
        let t = 1_800_000_000;
        let s = format(t);
        assert_eq!(s, "Fri, 15 Jan 2027 08:00:00 GMT");
        assert_eq!(parse(s.as_bytes()), Some(t as u64));
        assert_eq!(
            parse(b"  Sunday, 06-Nov-94 08:49:37 GMT "),
            Some(784_111_777)
        );
        assert_eq!(parse(b"yesterday"), None);
        assert_eq!(format(-5), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
