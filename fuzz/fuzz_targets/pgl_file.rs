//! Web Polygraph workload files (PGL): any text is either imported into a
//! workload file (which then loads, or is refused with a place) or refused
//! with a message; nothing panics, however deep or odd the expressions.
#![no_main]

use cacheoff_pgl::{import_text, Options};
use cacheoff_workload::{load_text, LoadError, Overrides};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = Options {
        include: Vec::new(),
        lenient: true,
    };
    // A directory that does not exist: relative includes find nothing.
    let path = Path::new("/nonexistent-cacheoff-fuzz/fuzz.pg");
    match import_text(path, text.to_string(), &opts) {
        Ok(imported) => match load_text("fuzz.toml", &imported.toml, &Overrides::default()) {
            Ok(_) => {}
            Err(LoadError::Invalid { message, .. }) => assert!(!message.is_empty()),
            Err(e) => panic!("an imported workload gave a non-parse error: {e}"),
        },
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
