//! Object bodies that are generated, never stored.
//!
//! Byte `k` of a body with seed `s` is `PATTERN[(s + k) mod 64K]` of one
//! fixed pseudo-random pattern. Generating and checking are plain copies and
//! comparisons; a flipped byte, a shifted or truncated body, or another
//! object's body (with probability 1 − 2⁻¹⁶) fails [`BodyCheck`].

use std::sync::OnceLock;

const PATTERN_LEN: usize = 1 << 16;

/// The pattern, stored twice so any run of up to `PATTERN_LEN` bytes from
/// any starting point is one contiguous slice.
fn pattern() -> &'static [u8] {
    static P: OnceLock<Box<[u8]>> = OnceLock::new();
    P.get_or_init(|| {
        let mut v = vec![0u8; 2 * PATTERN_LEN];
        let mut x: u64 = 0x243F_6A88_85A3_08D3;
        for chunk in v[..PATTERN_LEN].chunks_mut(8) {
            // xorshift64*: fixed, seed-independent content.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let w = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
        let (a, b) = v.split_at_mut(PATTERN_LEN);
        b.copy_from_slice(a);
        v.into_boxed_slice()
    })
}

#[inline]
fn start(seed: u64, offset: u64) -> usize {
    (seed.wrapping_add(offset) % PATTERN_LEN as u64) as usize
}

/// The body bytes at `offset`, at most `max` of them (and at most 64 KiB).
pub fn slice(seed: u64, offset: u64, max: usize) -> &'static [u8] {
    let s = start(seed, offset);
    &pattern()[s..s + max.min(PATTERN_LEN)]
}

/// Appends `len` body bytes starting at `offset`.
pub fn append(out: &mut Vec<u8>, seed: u64, offset: u64, len: u64) {
    let mut off = offset;
    let end = offset + len;
    while off < end {
        let piece = slice(seed, off, (end - off).min(PATTERN_LEN as u64) as usize);
        out.extend_from_slice(piece);
        off += piece.len() as u64;
    }
}

/// The MD5 digest of a body.
pub fn md5_digest(seed: u64, len: u64) -> [u8; 16] {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    let mut off = 0;
    while off < len {
        let piece = slice(seed, off, (len - off).min(PATTERN_LEN as u64) as usize);
        h.update(piece);
        off += piece.len() as u64;
    }
    h.finalize().into()
}

/// `Content-MD5` of a body: base64 of its MD5 digest.
pub fn content_md5(seed: u64, len: u64) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(md5_digest(seed, len))
}

/// Checks a body as it arrives, in pieces of any size.
#[derive(Debug, Clone)]
pub struct BodyCheck {
    seed: u64,
    expected_len: u64,
    received: u64,
    mismatch: bool,
}

impl BodyCheck {
    pub fn new(seed: u64, expected_len: u64) -> BodyCheck {
        BodyCheck {
            seed,
            expected_len,
            received: 0,
            mismatch: false,
        }
    }

    /// Feeds the next piece of the body.
    pub fn feed(&mut self, data: &[u8]) {
        if !self.mismatch {
            let mut off = self.received;
            let mut rest = data;
            while !rest.is_empty() {
                let want = slice(self.seed, off, rest.len());
                if rest[..want.len()] != *want {
                    self.mismatch = true;
                    break;
                }
                off += want.len() as u64;
                rest = &rest[want.len()..];
            }
        }
        self.received += data.len() as u64;
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    /// True if every byte so far matched.
    pub fn intact(&self) -> bool {
        !self.mismatch
    }

    /// True if the body is complete, of the right length, and intact.
    pub fn ok(&self) -> bool {
        !self.mismatch && self.received == self.expected_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_bodies_verify_in_any_pieces() {
        for (seed, len) in [(0u64, 0u64), (7, 1), (65_530, 100), (123, 300_000)] {
            let mut body = Vec::new();
            append(&mut body, seed, 0, len);
            assert_eq!(body.len() as u64, len);
            for piece in [1usize, 7, 1460, 65_536, 1 << 20] {
                let mut c = BodyCheck::new(seed, len);
                for p in body.chunks(piece) {
                    c.feed(p);
                }
                assert!(c.ok(), "seed {seed} len {len} piece {piece}");
            }
        }
    }

    #[test]
    fn content_md5_is_the_digest_of_the_body() {
        use base64::Engine;
        use md5::{Digest, Md5};
        let mut body = Vec::new();
        append(&mut body, 9, 0, 100_000);
        let want = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
        assert_eq!(content_md5(9, 100_000), want);
        // The well-known digest of the empty string.
        assert_eq!(content_md5(9, 0), "1B2M2Y8AsgTpgAmY7PhCfg==");
    }

    #[test]
    fn corruption_and_foreign_bodies_are_caught() {
        let mut body = Vec::new();
        append(&mut body, 42, 0, 5000);
        let mut flipped = body.clone();
        flipped[4321] ^= 1;
        let mut c = BodyCheck::new(42, 5000);
        c.feed(&flipped);
        assert!(!c.ok());
        assert_eq!(c.received(), 5000);

        let mut other = Vec::new();
        append(&mut other, 43, 0, 5000);
        let mut c = BodyCheck::new(42, 5000);
        c.feed(&other);
        assert!(!c.ok());

        let mut c = BodyCheck::new(42, 5000);
        c.feed(&body[..4999]);
        assert!(c.intact() && !c.ok(), "short body is not complete");
    }
}
