//! HTTP dates (RFC 9110 §5.6.7) as Unix seconds: the one place that
//! formats and parses them.

use std::time::{Duration, UNIX_EPOCH};

/// The IMF-fixdate for `unix_secs` (dates before 1970 print as the epoch).
pub fn format(unix_secs: i64) -> String {
    let secs = u64::try_from(unix_secs).unwrap_or(0);
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

/// An IMF-fixdate on the stack (always 29 bytes): [`format`] without an
/// allocation, for the servers' per-response dates.
pub struct DateText {
    buf: [u8; 29],
    len: usize,
}

impl DateText {
    pub fn new(unix_secs: i64) -> DateText {
        use std::fmt::Write;
        let secs = u64::try_from(unix_secs).unwrap_or(0);
        let mut t = DateText {
            buf: [0; 29],
            len: 0,
        };
        let _ = write!(
            t,
            "{}",
            httpdate::HttpDate::from(UNIX_EPOCH + Duration::from_secs(secs))
        );
        t
    }

    pub fn as_str(&self) -> &str {
        // Only whole `str`s are ever copied in.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for DateText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
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
    fn date_text_is_the_same_date() {
        for t in [0, 784_111_777, 1_700_000_000, 4_102_444_799] {
            assert_eq!(DateText::new(t).as_str(), format(t));
        }
    }

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
