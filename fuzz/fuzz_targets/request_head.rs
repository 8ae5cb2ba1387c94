//! The server role: request heads as origin servers and the proxy parse
//! them. Beyond "never panics": the answer depends only on the head's own
//! bytes, and a head is never complete before its last byte.
#![no_main]

use cacheoff_http::request::parse_request;
use libfuzzer_sys::fuzz_target;

#[path = "shared/heads.rs"]
mod heads;

fuzz_target!(|data: &[u8]| {
    let kept = parse_request(data, true);
    let bare = parse_request(data, false);
    heads::headers_change_nothing(&kept, &bare, |h| h.headers.clear());
    if let Ok(Some(h)) = bare {
        assert!(h.head_len > 0 && h.head_len <= data.len());
        let alone = parse_request(&data[..h.head_len], false);
        assert_eq!(
            alone.ok().flatten().as_ref(),
            Some(&h),
            "bytes after the head mattered"
        );
        assert!(
            matches!(parse_request(&data[..h.head_len - 1], false), Ok(None)),
            "complete before its last byte"
        );
    }
});
