//! Transaction ids and their echoes.
//!
//! A robot sends a unique id in [`XACT_HEADER`]; an origin server answers
//! with [`echo_of`] that id in [`ECHO_HEADER`]. A reply with the request's
//! own echo reached the origin (a miss); one with another echo was served
//! from a cache (a hit); one without an echo came from somewhere else.

use cacheoff_base::XactId;

pub const XACT_HEADER: &str = "X-Cacheoff-Xact";
pub const ECHO_HEADER: &str = "X-Cacheoff-Echo";

/// A replayed trace's time to first byte for this request, in
/// microseconds: the origin server waits that long before answering (what
/// the traced origin took), so only misses pay it.
pub const TTFB_HEADER: &str = "X-Cacheoff-Ttfb";

/// SPE: the Multiplier names each client request it copies in this header
/// (16 hex digits), on the Collector's request and on every copy.
pub const COPY_HEADER: &str = "X-Cacheoff-Copy";
/// SPE: the Collector answers a request carrying [`COPY_HEADER`] with its
/// value in this header. A proxy under test that fetched through the
/// Collector returns the copy's own name (a miss); one that served its
/// stored copy returns an earlier one (a hit).
pub const COLLECTED_HEADER: &str = "X-Cacheoff-Collected";

/// The echo a server returns for a transaction id: a fixed bijection, so a
/// cache cannot produce it without asking the origin.
#[inline]
pub fn echo_of(xact: XactId) -> u64 {
    (xact.get() ^ 0x6A09_E667_F3BC_C908).rotate_left(23)
}

/// The transaction id an echo was made from (the inverse of [`echo_of`]).
#[inline]
pub fn xact_of_echo(echo: u64) -> XactId {
    XactId::from_wire(echo.rotate_right(23) ^ 0x6A09_E667_F3BC_C908)
}

/// Writes `v` as 16 lowercase hex digits.
pub fn write_hex16(out: &mut Vec<u8>, v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..16).rev() {
        out.push(HEX[((v >> (i * 4)) & 0xf) as usize]);
    }
}

/// Parses up to 16 hex digits.
pub fn parse_hex(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 16 {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &c| {
        let d = (c as char).to_digit(16)?;
        Some(acc << 4 | u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_echo_differs() {
        let mut b = Vec::new();
        write_hex16(&mut b, 0x1234_abcd);
        assert_eq!(b, b"000000001234abcd");
        assert_eq!(parse_hex(&b), Some(0x1234_abcd));
        assert_eq!(parse_hex(b"xyz"), None);
        let x = XactId::from_wire;
        assert_ne!(echo_of(x(1)), 1);
        assert_ne!(echo_of(x(1)), echo_of(x(2)));
        for v in [0, 1, 3 << 48 | 77, u64::MAX] {
            assert_eq!(xact_of_echo(echo_of(x(v))), x(v));
        }
    }
}
