//! Writes the committed sample traces to crates/trace/samples/ (the test
//! `samples_are_up_to_date` fails when they differ from these).
//!
//! The one file not made here, samples/wikimedia.tsv.zst, is the zstd
//! command's: `zstd -q -19 samples/wikimedia.tsv -o samples/wikimedia.tsv.zst`.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    std::fs::create_dir_all(&dir)?;
    for (name, _, bytes) in cacheoff_trace::sample::sample_files() {
        std::fs::write(dir.join(name), bytes)?;
        println!("wrote samples/{name}");
    }
    Ok(())
}
