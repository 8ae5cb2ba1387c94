//! Trace readers on arbitrary bytes: each format given, and detection
//! (which also unwraps gzip and zstd), read to the end. Beyond "never
//! panics": every iteration ends, at most one error comes and it is the
//! last item, an error names a line (or record), and
//! the ceilings of whatever was read keep LRU and MIN within the infinite
//! cache's.
#![no_main]

use cacheoff_trace::ceiling::CeilingCalc;
use cacheoff_trace::{Columns, Format, TraceReader};
use libfuzzer_sys::fuzz_target;

fn drain(data: &[u8], format: Option<Format>) {
    let Ok(reader) = TraceReader::from_reader(std::io::Cursor::new(data.to_vec()), format, "fuzz")
    else {
        return;
    };
    let mut calc = CeilingCalc::new(1000);
    let mut reader = reader;
    for item in reader.by_ref() {
        match item {
            Ok(r) => calc.add(&r),
            Err(e) => {
                assert!(e.line() >= 1, "{e}");
                let _ = e.to_string();
                break;
            }
        }
    }
    assert!(reader.next().is_none(), "items after the end or an error");
    let c = calc.finish();
    assert!(c.lru <= c.infinite + 1e-9, "{c:?}");
    assert!(c.belady.is_nan() || c.belady <= c.infinite + 1e-9, "{c:?}");
}

fuzz_target!(|data: &[u8]| {
    drain(data, None);
    for format in [
        Format::Squid,
        Format::Clf,
        Format::OracleGeneral,
        Format::Wikimedia,
        Format::Csv(Columns::default()),
        Format::Csv(
            Columns::parse("time,url,size,ttfb,status,method,client,cachable,unit=ms").unwrap(),
        ),
    ] {
        drain(data, Some(format));
    }
    // The first line as a --columns spec, the rest as its trace.
    if let Some(i) = data.iter().position(|&b| b == b'\n') {
        if let Ok(spec) = std::str::from_utf8(&data[..i]) {
            if let Ok(c) = Columns::parse(spec) {
                drain(&data[i + 1..], Some(Format::Csv(c)));
            }
        }
    }
});
