//! Checks both head parsers share: keeping the headers must not change
//! what is parsed, nor whether a head is complete or wrong.

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
