//! The server role: request heads as origin servers and the proxy parse
//! them. Beyond "never panics": the answer depends only on the head's own
//! bytes, and a head is never complete before its last byte; the framing
//! is never ambiguous (Transfer-Encoding accepted means chunked and no
//! Content-Length); the strict parser only adds refusals, and what it
//! accepts has at most one Host (exactly one in HTTP/1.1).
#![no_main]

use cacheoff_http::request::{parse_request, parse_request_strict};
use cacheoff_http::MAX_HEAD_LEN;
use libfuzzer_sys::fuzz_target;

#[path = "shared/heads.rs"]
mod heads;

fuzz_target!(|data: &[u8]| {
    let kept = parse_request(data, true);
    let bare = parse_request(data, false);
    heads::headers_change_nothing(&kept, &bare, |h| h.headers.clear());
    heads::scanner_agrees(data, &bare, |h| h.head_len);
    heads::status_is_known(&bare);
    let strict = parse_request_strict(data, false, MAX_HEAD_LEN);
    heads::status_is_known(&strict);
    match (&strict, &bare) {
        (Ok(s), Ok(b)) => assert_eq!(s, b, "strictness changed a parse"),
        (Err(_), Ok(Some(_))) | (Err(_), Err(_)) => {}
        _ => panic!("strict and lenient disagree: {strict:?} vs {bare:?}"),
    }
    if let Ok(Some(h)) = &kept {
        assert!(!(h.chunked && h.content_length.is_some()), "two framings");
        if heads::count(&h.headers, "transfer-encoding") > 0 {
            assert!(h.chunked && h.minor >= 1, "a coding other than chunked");
        }
        if matches!(strict, Ok(Some(_))) {
            let hosts = heads::count(&h.headers, "host");
            assert!(hosts == 1 || (hosts == 0 && h.minor == 0), "{hosts} Hosts");
        }
        if h.target
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        {
            assert!(h.path().starts_with('/'), "path {:?}", h.path());
            let authority = h.authority().expect("an absolute target names one");
            assert!(!authority.contains(['/', '?', '#']), "{authority:?}");
        }
    }
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
