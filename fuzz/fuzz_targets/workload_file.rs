//! Workload files: any text is either a workload that runs or an error that
//! names a place; an accepted workload survives the run manifest's JSON
//! round trip and can be scheduled and described.
#![no_main]

use cacheoff_workload::{describe, load_text, LoadError, Overrides, Workload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_text("fuzz/workload.toml", text, &Overrides::default()) {
        Ok(w) => {
            let json = serde_json::to_string(&w).expect("a workload serialises");
            let back: Workload = serde_json::from_str(&json).expect("its manifest reads back");
            assert_eq!(back, w, "the manifest changed the workload");
            let schedule = w.schedule();
            assert!(schedule.total_s().is_finite());
            assert!(w.offered_dhr().is_finite());
            let _ = describe(&w);
        }
        Err(LoadError::Invalid { message, .. }) => assert!(!message.is_empty()),
        Err(e) => panic!("a text gave a non-parse error: {e}"),
    }
});
