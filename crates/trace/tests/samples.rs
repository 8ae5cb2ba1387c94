//! The committed sample traces are the sample writer's (run
//! `cargo run -p cacheoff-trace --example make_samples` after changing it),
//! they read back with detection, and their ceilings are what they were.

use std::path::{Path, PathBuf};

use cacheoff_trace::ceiling::{CeilingCalc, Ceilings};
use cacheoff_trace::sample::{sample_files, SAMPLE_COLUMNS};
use cacheoff_trace::{Columns, Format, Record, TraceReader};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn read(name: &str, format: Option<Format>) -> (Format, Vec<Record>) {
    let r = TraceReader::open(&dir().join(name), format).unwrap();
    let f = r.format().clone();
    (f, r.collect::<Result<_, _>>().unwrap())
}

#[test]
fn samples_are_up_to_date() {
    for (name, _, bytes) in sample_files() {
        let committed = std::fs::read(dir().join(name)).unwrap_or_default();
        assert!(
            committed == bytes,
            "samples/{name} differs from the sample writer's: run cargo run -p cacheoff-trace --example make_samples"
        );
    }
}

#[test]
fn samples_read_back_with_detection() {
    for (name, format, _) in sample_files() {
        let given = matches!(format, Format::Csv(_)).then(|| format.clone());
        let (detected, records) = read(name, given);
        assert_eq!(detected, format, "{name}");
        assert_eq!(records.len(), 200, "{name}");
        assert_eq!(records[0].time_us, 0);
    }
    // Made by the zstd command (see examples/make_samples.rs).
    assert_eq!(read("wikimedia.tsv.zst", None), read("wikimedia.tsv", None));
    assert_eq!(read("squid.log.gz", None), read("squid.log", None));
    assert_eq!(read("clf.log.zst", None), read("clf.log", None));
}

#[test]
fn sample_ceilings() {
    let csv = Format::Csv(Columns::parse(SAMPLE_COLUMNS).unwrap());
    let mut seen = Vec::new();
    for (name, format) in [
        ("squid.log", None),
        ("clf.log", None),
        ("oracle.bin", None),
        ("wikimedia.tsv", None),
        ("trace.csv", Some(csv)),
    ] {
        let mut calc = CeilingCalc::new(100_000);
        for r in TraceReader::open(&dir().join(name), format).unwrap() {
            calc.add(&r.unwrap());
        }
        let c = calc.finish();
        assert_eq!(c.requests, 200);
        assert!(c.lru <= c.belady && c.belady <= c.infinite, "{name}: {c:?}");
        seen.push((name, c));
    }
    // Squid, CLF and CSV know the methods and statuses: the same ratios.
    // oracleGeneral and Wikimedia write uncachable requests as one-off
    // objects, which never hit: the same infinite and MIN ratios (MIN from
    // given next uses equals MIN from next uses found at the end), but the
    // one-off objects take room in the LRU cache.
    let (squid, clf, oracle, wiki, csv) = (seen[0].1, seen[1].1, seen[2].1, seen[3].1, seen[4].1);
    assert_eq!(
        (squid.infinite, squid.lru, squid.belady),
        (74.0, 20.5, 46.5)
    );
    for c in [clf, csv] {
        let no_time = |c: Ceilings| Ceilings {
            duration_us: 0,
            ..c
        };
        assert_eq!(no_time(c), no_time(squid));
    }
    for c in [oracle, wiki] {
        assert_eq!((c.infinite, c.belady), (squid.infinite, squid.belady));
        assert!(c.lru <= squid.lru);
    }
    assert_eq!(oracle.lru, wiki.lru);
}
