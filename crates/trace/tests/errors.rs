//! Every malformed line is an error naming the trace, the line (or record)
//! and the field, and the reader stops after it.

use cacheoff_trace::{Columns, ErrorKind, Format, TraceError, TraceReader};

/// The records before the error, and the error.
fn first_error(text: &[u8], format: Option<Format>) -> (usize, TraceError) {
    let mut r = TraceReader::from_reader(std::io::Cursor::new(text.to_vec()), format, "access.log")
        .unwrap();
    let mut ok = 0;
    for item in r.by_ref() {
        match item {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(r.next().is_none(), "the reader goes on after {e}");
                return (ok, e);
            }
        }
    }
    panic!("no error in {:?}", String::from_utf8_lossy(text));
}

fn message(text: &str, format: Option<Format>) -> String {
    first_error(text.as_bytes(), format).1.to_string()
}

const SQUID_OK: &str = "1700000000.123 45 10.0.0.1 TCP_MISS/200 13312 GET http://example.com/a.gif - HIER_DIRECT/10.1.1.1 image/gif\n";

#[test]
fn squid() {
    let bad = format!("{SQUID_OK}\n{}", SQUID_OK.replace("13312", "12a"));
    let (ok, e) = first_error(bad.as_bytes(), None);
    assert_eq!(ok, 1);
    assert_eq!(
        e.to_string(),
        "access.log:3: field 5 (size) is not a number: \"12a\""
    );
    assert_eq!(
        (e.kind, e.line(), e.column),
        (ErrorKind::Syntax, 3, Some(5))
    );
    let cases = [
        (
            "1700000000.1x",
            "access.log:2: field 1 (time) is not a time: \"1700000000.1x\"",
        ),
        ("TCP_MISS/200", "TCP_MISS"),
        (" 45 ", " 4x5 "),
    ];
    assert_eq!(
        message(
            &format!(
                "{SQUID_OK}{}",
                SQUID_OK.replace("1700000000.123", cases[0].0)
            ),
            Some(Format::Squid)
        ),
        cases[0].1
    );
    assert_eq!(
        message(
            &format!("{SQUID_OK}{}", SQUID_OK.replace(cases[1].0, cases[1].1)),
            None
        ),
        "access.log:2: field 4 (code/status) is not CODE/STATUS: \"TCP_MISS\""
    );
    assert_eq!(
        message(
            &format!("{SQUID_OK}{}", SQUID_OK.replace(cases[2].0, cases[2].1)),
            None
        ),
        "access.log:2: field 2 (elapsed) is not a number: \"4x5\""
    );
    assert_eq!(
        message(&format!("{SQUID_OK}1700000000.123 45 10.0.0.1\n"), None),
        "access.log:2: 3 fields where Squid's log has 10 (time elapsed client code/status bytes method URL ...)"
    );
}

const CLF_OK: &str =
    "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326\n";

#[test]
fn clf() {
    let m = |from: &str, to: &str| {
        message(
            &format!("{CLF_OK}{CLF_OK}{}", CLF_OK.replace(from, to)),
            None,
        )
    };
    assert_eq!(
        m("2326", "23x"),
        "access.log:3: field 7 (size) is not a number: \"23x\""
    );
    assert_eq!(
        m(" 200 ", " 2oo "),
        "access.log:3: field 6 (status) is not a status: \"2oo\""
    );
    assert_eq!(
        m(" 200 2326", ""),
        "access.log:3: no status after the request (field 6)"
    );
    assert_eq!(
        m(" 2326", ""),
        "access.log:3: no size after the status (field 7)"
    );
    assert_eq!(
        m("10/Oct/2000", "10/Okt/2000"),
        "access.log:3: field 4 (date) is not a date: \"10/Okt/2000:13:55:36 -0700\""
    );
    assert!(m("[", "").starts_with("access.log:3: field 4 (date) is not [date]: "));
    assert!(
        m("\"GET", "GET").starts_with("access.log:3: field 5 (request) is not a quoted request: ")
    );
    assert!(
        m(" HTTP/1.0\"", "").starts_with("access.log:3: field 5 (request) is not a quoted request")
    );
}

const WIKI_OK: &str = "relative_unix\thashed_path_query\timage_type\tresponse_size\ttime_firstbyte\n1\t2\tjpeg\t3\t0.1\n";

#[test]
fn wikimedia() {
    let m = |line: &str| message(&format!("{WIKI_OK}{line}\n"), None);
    assert_eq!(
        m("2\t2\tjpeg\t3x\t0.1"),
        "access.log:3: field 4 (response_size) is not a number: \"3x\""
    );
    assert_eq!(
        m("2\tabc\tjpeg\t3\t0.1"),
        "access.log:3: field 2 (hashed_path_query) is not an integer: \"abc\""
    );
    assert_eq!(
        m("2\t2\tjpeg\t3\tslow"),
        "access.log:3: field 5 (time_firstbyte) is not a time: \"slow\""
    );
    assert_eq!(
        m("-2\t2\tjpeg\t3\t0.1"),
        "access.log:3: field 1 (relative_unix) is not a time: \"-2\""
    );
    assert_eq!(
        m("2\t2\tjpeg\t3"),
        "access.log:3: 4 tab-separated fields where the Wikimedia trace has 5 (relative_unix hashed_path_query image_type response_size time_firstbyte)"
    );
    // A header anywhere but first is a malformed line.
    assert!(m(WIKI_OK.lines().next().unwrap())
        .starts_with("access.log:3: field 1 (relative_unix) is not a time"));
}

#[test]
fn csv() {
    let f = Some(Format::Csv(
        Columns::parse("time=ts,url=u,size=bytes,status=st").unwrap(),
    ));
    let m = |text: &str| message(text, f.clone());
    assert_eq!(
        m("ts,u,bytes,st\n1,/a,2,200\n1,/a,2x,200\n"),
        "access.log:3: field 3 (size) is not a number: \"2x\""
    );
    assert_eq!(
        m("ts,u,bytes,st\n1,/a,2,2oo\n"),
        "access.log:2: field 4 (status) is not a status: \"2oo\""
    );
    assert_eq!(
        m("ts,u,bytes,st\nsoon,/a,2,200\n"),
        "access.log:2: field 1 (time) is not a time: \"soon\""
    );
    assert_eq!(
        m("ts,u,bytes,st\n1,\"/a,2,200\n"),
        "access.log:2: field 2 has an unterminated quote"
    );
    assert_eq!(
        m("ts,u,bytes,st\n1,/a\n"),
        "access.log:2: 2 fields, no column 3 (size)"
    );
    assert_eq!(
        m("\ntime,url,size,status\n"),
        "access.log:2: the header has no column \"ts\" for time (it has: time, url, size, status)"
    );
    let e = message("1,/a,2\n", Some(Format::Csv(Columns::default())));
    assert_eq!(e, "access.log:1: the header does not name time, url (or key) and size columns (it has: 1, /a, 2); give --columns");
    let f = Some(Format::Csv(
        Columns::parse("time,url,size,cachable").unwrap(),
    ));
    assert_eq!(
        message("1,/a,2,true\n1,/a,2,maybe\n", f),
        "access.log:2: field 4 (cachable) is not true or false: \"maybe\""
    );
}

#[test]
fn oracle_general() {
    let mut bin = Vec::new();
    for (t, id, next) in [(1u32, 7u64, 2i64), (1, 8, -1), (2, 7, -1)] {
        bin.extend(t.to_le_bytes());
        bin.extend(id.to_le_bytes());
        bin.extend(100u32.to_le_bytes());
        bin.extend(next.to_le_bytes());
    }
    bin.truncate(3 * 24 - 7);
    let (ok, e) = first_error(&bin, Some(Format::OracleGeneral));
    assert_eq!(ok, 2);
    assert_eq!(
        e.to_string(),
        "access.log: record 3 (byte 48): the trace ends within a record: 17 of 24 bytes"
    );
    assert_eq!(e.line(), 3);
}

#[test]
fn too_long_lines_and_bad_input() {
    let long = format!("{SQUID_OK}{}\n", "x".repeat((1 << 20) + 10));
    assert_eq!(
        message(&long, Some(Format::Squid)),
        "access.log:2: line longer than 1024 KiB"
    );
    let e = TraceReader::open(std::path::Path::new("/nonexistent/trace.log"), None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/trace.log: cannot open: "),
        "{e}"
    );
    // A gzip magic then garbage: a read error, not a panic.
    let mut r =
        TraceReader::from_reader(&b"\x1f\x8b\x08\x00garbage"[..], Some(Format::Squid), "x.gz")
            .unwrap();
    let e = r.next().unwrap().unwrap_err();
    assert_eq!((e.kind, e.line()), (ErrorKind::Io, 1));
    assert!(r.next().is_none());
}

#[test]
fn detection_failures_ask_for_the_format() {
    let e = |text: &[u8]| {
        TraceReader::from_reader(std::io::Cursor::new(text.to_vec()), None, "t.log").unwrap_err()
    };
    let x = e(b"time,url,size\n1,/a,3\n");
    assert_eq!(x.kind, ErrorKind::Detect);
    assert_eq!(
        x.to_string(),
        "t.log: the first line \"time,url,size\" is in none of the formats squid, clf, wikimedia; give --format (csv with --columns)"
    );
    assert_eq!(
        e(b"").to_string(),
        "t.log: the trace is empty: no format to detect"
    );
    assert!(e(b"\x00\x01\x02").to_string().starts_with(
        "t.log: binary data (00 01 02, 3 bytes) that does not read as oracleGeneral records"
    ));
    assert!(
        e(b"\x28\xb5\x2f\xfdjunk")
            .to_string()
            .starts_with("t.log: cannot read: zstd: "),
        "{}",
        e(b"\x28\xb5\x2f\xfdjunk")
    );
}
