//! From bytes to a trace's plain text or records: gzip and zstd unwrapped
//! by their magic, and the format told from the first bytes. Both stream:
//! only a bounded prefix is held to look at, then read again.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use crate::format::Format;
use crate::text;

/// A trace's bytes, wherever they come from.
pub(crate) type Source = Box<dyn Read + Send>;

/// How much of the (decompressed) start is looked at to tell the format.
pub(crate) const PEEK: usize = 64 * 1024;

/// Reads up to `n` bytes (fewer only at the end) and gives them with a
/// reader that yields them again, then the rest.
pub(crate) fn peek(r: Source, n: usize) -> io::Result<(Vec<u8>, Source)> {
    let mut prefix = Vec::with_capacity(n.min(PEEK));
    let mut r = r;
    (&mut r).take(n as u64).read_to_end(&mut prefix)?;
    let again = Cursor::new(prefix.clone()).chain(r);
    Ok((prefix, Box::new(again)))
}

/// The compression a trace came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

/// Unwraps gzip (`1f 8b`, members concatenated) or zstd (`28 b5 2f fd`,
/// frames concatenated) by their magic; anything else passes as it is.
pub(crate) fn decompress(r: Source) -> io::Result<(Source, Compression)> {
    let (magic, r) = peek(r, 4)?;
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        let gz = flate2::read::MultiGzDecoder::new(r);
        (Box::new(gz), Compression::Gzip)
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        (
            Box::new(ZstdFrames::Between(BufReader::new(r))),
            Compression::Zstd,
        )
    } else {
        (r, Compression::None)
    })
}

/// A zstd stream of one or more frames, decoded one frame at a time.
enum ZstdFrames {
    Frame(
        Box<ruzstd::decoding::StreamingDecoder<BufReader<Source>, ruzstd::decoding::FrameDecoder>>,
    ),
    Between(BufReader<Source>),
    Done,
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match std::mem::replace(self, ZstdFrames::Done) {
                ZstdFrames::Done => return Ok(0),
                ZstdFrames::Frame(mut d) => {
                    let n = d.read(buf)?;
                    if n > 0 || buf.is_empty() {
                        *self = ZstdFrames::Frame(d);
                        return Ok(n);
                    }
                    *self = ZstdFrames::Between(d.into_inner());
                }
                ZstdFrames::Between(mut src) => {
                    if src.fill_buf()?.is_empty() {
                        return Ok(0);
                    }
                    let d = ruzstd::decoding::StreamingDecoder::new(src).map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}"))
                    })?;
                    *self = ZstdFrames::Frame(Box::new(d));
                }
            }
        }
    }
}

/// Whether bytes look like text: no control characters but tab, CR, LF.
fn is_text(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|&b| b >= 0x20 && b != 0x7f || matches!(b, b'\t' | b'\r' | b'\n'))
}

/// Whether the start of a binary trace reads as oracleGeneral records:
/// at least one whole record, a whole number of them if `complete`, times
/// that never go back, next accesses that are none (-1) or later.
fn looks_oracle(prefix: &[u8], complete: bool) -> bool {
    if prefix.len() < 24 || complete && !prefix.len().is_multiple_of(24) {
        return false;
    }
    let mut last = 0;
    prefix.chunks_exact(24).take(256).enumerate().all(|(i, r)| {
        let t = u32::from_le_bytes(r[0..4].try_into().unwrap());
        let next = i64::from_le_bytes(r[16..24].try_into().unwrap());
        let ok = t >= last && (next == -1 || next == i64::MAX || next > i as i64);
        last = t;
        ok
    })
}

/// Tells the format from the start of a trace; `complete` when the prefix
/// is the whole trace. CSV is never guessed.
pub(crate) fn detect(prefix: &[u8], complete: bool) -> Result<Format, String> {
    if prefix.is_empty() {
        return Err("the trace is empty: no format to detect".into());
    }
    if !is_text(prefix) {
        if looks_oracle(prefix, complete) {
            return Ok(Format::OracleGeneral);
        }
        let shown: Vec<String> = prefix.iter().take(16).map(|b| format!("{b:02x}")).collect();
        return Err(format!(
            "binary data ({}, {} bytes{}) that does not read as oracleGeneral records; give --format",
            shown.join(" "),
            prefix.len(),
            if complete { "" } else { " or more" }
        ));
    }
    let text = String::from_utf8_lossy(prefix);
    let mut lines = text.split('\n');
    if !complete {
        lines.next_back(); // may be cut short
    }
    let mut lines = lines
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty());
    let Some(mut first) = lines.next() else {
        return Err("no whole line in the first 64 KiB; give --format".into());
    };
    if text::is_wikimedia_header(first) {
        match lines.next() {
            Some(l) => first = l,
            None => return Ok(Format::Wikimedia),
        }
    }
    let candidates: Vec<Format> = [
        (Format::Squid, text::squid(first).is_ok()),
        (Format::Clf, text::clf(first).is_ok()),
        (Format::Wikimedia, text::wikimedia(first).is_ok()),
    ]
    .into_iter()
    .filter_map(|(f, ok)| ok.then_some(f))
    .collect();
    let shown: String = first.chars().take(120).collect();
    match candidates.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "the first line {shown:?} is in none of the formats squid, clf, wikimedia; give --format (csv with --columns)"
        )),
        several => Err(format!(
            "the first line {shown:?} reads as {}; give --format",
            several.iter().map(Format::name).collect::<Vec<_>>().join(" and as ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle(records: &[(u32, u64, u32, i64)]) -> Vec<u8> {
        let mut v = Vec::new();
        for &(t, id, size, next) in records {
            v.extend(t.to_le_bytes());
            v.extend(id.to_le_bytes());
            v.extend(size.to_le_bytes());
            v.extend(next.to_le_bytes());
        }
        v
    }

    #[test]
    fn detects_each_format_from_its_first_line() {
        let d = |s: &str| detect(s.as_bytes(), true);
        assert_eq!(
            d("\n1700000000.123 45 10.0.0.1 TCP_MISS/200 1 GET http://e/ - HIER_DIRECT/x -\n"),
            Ok(Format::Squid)
        );
        assert_eq!(
            d("h - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 2\r\n"),
            Ok(Format::Clf)
        );
        assert_eq!(d("1\t2\tjpeg\t3\t0.1\n"), Ok(Format::Wikimedia));
        assert_eq!(
            d("relative_unix\thashed_path_query\timage_type\tresponse_size\ttime_firstbyte\n"),
            Ok(Format::Wikimedia)
        );
        let e = d("time,url,size\n1,/a,2\n").unwrap_err();
        assert!(
            e.contains("\"time,url,size\" is in none of the formats"),
            "{e}"
        );
        assert!(d("").is_err());
    }

    #[test]
    fn detects_oracle_general_and_rejects_other_binaries() {
        let v = oracle(&[(5, 1, 100, 2), (5, 2, 200, -1), (6, 1, 100, -1)]);
        assert_eq!(detect(&v, true), Ok(Format::OracleGeneral));
        assert!(detect(&v[..70], true).is_err(), "not whole records");
        assert_eq!(detect(&v[..70], false), Ok(Format::OracleGeneral));
        let back_in_time = oracle(&[(6, 1, 100, -1), (5, 2, 200, -1)]);
        let e = detect(&back_in_time, true).unwrap_err();
        assert!(e.starts_with("binary data (06 00 00 00 01"), "{e}");
    }
}
