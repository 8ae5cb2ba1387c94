//! The client role: response heads and chunked bodies as robots and the
//! proxy read them. The first byte picks HEAD-or-not and where to split the
//! body; a chunked body must decode the same whole or in two reads.
//! Transfer-Encoding, when the reply may have a body, frames it (chunked
//! or until close, never a length); a reply whose lengths conflict, or that
//! runs until close, never leaves the connection for reuse.
#![no_main]

use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::response::parse_response;
use cacheoff_http::Framing;
use libfuzzer_sys::fuzz_target;

#[path = "shared/heads.rs"]
mod heads;

fuzz_target!(|input: &[u8]| {
    let Some((&flags, data)) = input.split_first() else {
        return;
    };
    let head_request = flags & 1 == 1;
    let kept = parse_response(data, head_request, true);
    let bare = parse_response(data, head_request, false);
    heads::headers_change_nothing(&kept, &bare, |h| h.headers.clear());
    heads::scanner_agrees(data, &bare, |h| h.head_len);
    heads::status_is_known(&bare);
    if let Ok(Some(h)) = &kept {
        let te = heads::count(&h.headers, "transfer-encoding") > 0;
        let cl = heads::count(&h.headers, "content-length") > 0;
        assert_eq!(h.conflicting_length, te && cl, "conflict not reported");
        if te {
            assert!(
                !matches!(h.framing, Framing::Length(_)),
                "a length beat codings"
            );
        }
        if h.conflicting_length || h.framing == Framing::UntilClose {
            assert!(!h.keep_alive, "an untrustworthy framing kept alive");
        }
    }
    let Ok(Some(h)) = bare else {
        return;
    };
    assert!(h.head_len > 0 && h.head_len <= data.len());
    let alone = parse_response(&data[..h.head_len], head_request, false);
    assert_eq!(
        alone.ok().flatten().as_ref(),
        Some(&h),
        "bytes after the head mattered"
    );
    assert!(
        matches!(
            parse_response(&data[..h.head_len - 1], head_request, false),
            Ok(None)
        ),
        "complete before its last byte"
    );
    if head_request || h.status == 304 || h.status == 204 {
        assert_eq!(h.framing, Framing::Empty, "a body where none may be");
    }
    if h.framing != Framing::Chunked {
        return;
    }
    let body = &data[h.head_len..];
    let whole = decode(&[body]);
    let cut = usize::from(flags >> 1) * body.len() / 127;
    let split = decode(&[&body[..cut], &body[cut..]]);
    assert_eq!(whole, split, "decoding depends on how the bytes arrive");
});

/// Decoded data, and the input bytes used if the body ended (`Some`), or
/// whether it is still open (`None` with `Ok`) or failed (`Err`).
fn decode(parts: &[&[u8]]) -> (Vec<u8>, Result<Option<usize>, ()>) {
    let mut dec = ChunkedDecoder::default();
    let mut out = Vec::new();
    let mut used = 0;
    for p in parts {
        match dec.decode(p, |d| out.extend_from_slice(d)) {
            Ok(n) => {
                assert!(n <= p.len());
                used += n;
                if dec.is_done() {
                    return (out, Ok(Some(used)));
                }
                assert_eq!(n, p.len(), "stopped early without finishing");
            }
            Err(_) => return (out, Err(())),
        }
    }
    (out, Ok(None))
}
