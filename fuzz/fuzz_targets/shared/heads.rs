//! Checks both head parsers share: keeping the headers must not change
//! what is parsed, nor whether a head is complete or wrong; the head
//! scanner agrees with them; refusals map to a status.

use cacheoff_http::{HeadScanner, HttpError};
use std::fmt::Debug;

/// `kept` and `bare` are the parses of one input with and without the
/// headers kept; `clear` drops the kept headers from a parse.
pub fn headers_change_nothing<T: Clone + Debug + PartialEq, E: Debug>(
    kept: &Result<Option<T>, E>,
    bare: &Result<Option<T>, E>,
    clear: impl Fn(&mut T),
) {
    match (kept, bare) {
        (Ok(Some(k)), Ok(Some(b))) => {
            let mut k = k.clone();
            clear(&mut k);
            assert_eq!(&k, b, "keeping headers changed the parse");
        }
        (Ok(None), Ok(None)) | (Err(_), Err(_)) => {}
        _ => panic!("keeping headers changed the outcome: {kept:?} vs {bare:?}"),
    }
}

/// The resumable scanner finds the end the parser finds, whether it sees
/// the whole input at once or a byte at a time.
pub fn scanner_agrees<T, E>(
    data: &[u8],
    parsed: &Result<Option<T>, E>,
    head_len: impl Fn(&T) -> usize,
) {
    let whole = HeadScanner::new().scan(data);
    let mut drip = HeadScanner::new();
    let dripped = (0..=data.len()).map(|n| drip.scan(&data[..n])).last();
    assert_eq!(dripped.flatten(), whole, "the scan depends on the reads");
    match parsed {
        Ok(Some(h)) => assert_eq!(whole, Some(head_len(h)), "scanner and parser differ"),
        Ok(None) => assert_eq!(whole, None, "scanner found an end the parser did not"),
        Err(_) => {}
    }
}

/// A refused message maps to a status a server may answer with.
pub fn status_is_known<T>(parsed: &Result<Option<T>, HttpError>) {
    if let Err(e) = parsed {
        assert!(matches!(e.status(), 400 | 431 | 501), "{e:?}");
    }
}

/// How many header lines are named `name`.
pub fn count(headers: &[(String, Vec<u8>)], name: &str) -> usize {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .count()
}
