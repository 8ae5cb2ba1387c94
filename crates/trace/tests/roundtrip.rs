//! Every format written by the sample writer reads back as the records it
//! was given (to the format's resolution), with the format detected (CSV
//! with its columns), plain, gzip'd and zstd'd.

use std::io::Write;

use cacheoff_trace::sample::{self, next_accesses, SampleRecord};
use cacheoff_trace::{Columns, Format, Record, TraceReader};

fn formats() -> Vec<Format> {
    vec![
        Format::Squid,
        Format::Clf,
        Format::OracleGeneral,
        Format::Wikimedia,
        Format::Csv(Columns::default()),
        Format::Csv(Columns::parse("time=ts,key=k,size=bytes,method=m,status=s,unit=ms").unwrap()),
        Format::Csv(Columns::parse("status,time,-,url,size,ttfb,client,sep=tab,unit=us").unwrap()),
    ]
}

fn expected(format: &Format, records: &[SampleRecord]) -> Vec<Record> {
    let mut want: Vec<Record> = records.iter().map(|r| r.expected(format)).collect();
    if let Format::Csv(c) = format {
        // Only the columns the spec names come back.
        let fields: Vec<&str> = c.fields().map(|f| f.name()).collect();
        let has = |f: &str| fields.contains(&f);
        for (w, r) in want.iter_mut().zip(records) {
            if !has("ttfb") {
                w.ttfb_us = None;
            }
            if !has("client") {
                w.client = 0;
            }
            if has("key") {
                (w.key, w.site) = (cacheoff_trace::hash_bytes(r.url().as_bytes()), 0);
            }
            if !has("method") && !has("status") {
                w.cachable = None;
            }
            if !has("method") {
                w.method = cacheoff_trace::Method::Get;
            }
            if !has("status") {
                w.status = None;
            }
            if has("status") && !has("method") {
                w.cachable = Some(cacheoff_trace::cachable_by_default(w.method, w.status));
            }
        }
    }
    if *format == Format::OracleGeneral {
        let ids: Vec<u64> = records.iter().map(|r| r.id).collect();
        for (w, n) in want.iter_mut().zip(next_accesses(&ids)) {
            w.next_access_vtime = Some(n);
        }
    }
    want
}

fn read_all(bytes: Vec<u8>, format: Option<Format>) -> Vec<Record> {
    TraceReader::from_reader(std::io::Cursor::new(bytes), format, "t")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn each_format_reads_back_what_was_written() {
    let records: Vec<SampleRecord> = sample::synthetic(3, 500, 80, 0.9, 30.0).collect();
    for format in formats() {
        let mut bytes = Vec::new();
        sample::write(&format, records.iter().cloned(), &mut bytes).unwrap();
        let given = matches!(format, Format::Csv(_)).then(|| format.clone());
        let r = TraceReader::from_reader(std::io::Cursor::new(bytes.clone()), given.clone(), "t")
            .unwrap();
        assert_eq!(r.format(), &format);
        let got: Vec<Record> = r.collect::<Result<_, _>>().unwrap();
        let want = expected(&format, &records);
        assert_eq!(got.len(), want.len(), "{format:?}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{} record {i}", format.name());
        }

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).unwrap();
        assert_eq!(
            read_all(gz.finish().unwrap(), given.clone()),
            want,
            "gzip {format:?}"
        );
        let zst = ruzstd::encoding::compress_to_vec(
            &bytes[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(read_all(zst, given), want, "zstd {format:?}");
    }
}

#[test]
fn concatenated_compressed_streams_read_as_one() {
    let records: Vec<SampleRecord> = sample::synthetic(4, 40, 10, 0.9, 30.0).collect();
    let mut text = Vec::new();
    sample::write(&Format::Squid, records.iter().cloned(), &mut text).unwrap();
    let (a, b) = text.split_at(text.len() / 2);
    let mut zst = Vec::new();
    let mut gz = Vec::new();
    for part in [a, b] {
        zst.extend(ruzstd::encoding::compress_to_vec(
            part,
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(part).unwrap();
        gz.extend(e.finish().unwrap());
    }
    let want = expected(&Format::Squid, &records);
    assert_eq!(read_all(zst, None), want);
    assert_eq!(read_all(gz, None), want);
}

#[test]
fn absolute_times_are_rebased_to_the_first_record() {
    let log = "1700000010.500 1 c TCP_MISS/200 1 GET http://h/a - - -\n\
               1700000012.000 1 c TCP_MISS/200 1 GET http://h/b - - -\n\
               1700000009.000 1 c TCP_MISS/200 1 GET http://h/c - - -\n";
    let got = read_all(log.as_bytes().to_vec(), None);
    let times: Vec<u64> = got.iter().map(|r| r.time_us).collect();
    assert_eq!(times, [0, 1_500_000, 0]);
}

#[test]
fn a_long_trace_streams() {
    // 200k records through a reader that is never held whole: the reader's
    // own buffers stay the same size however long the trace.
    struct Endless(u64, Vec<u8>, usize);
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.2 == self.1.len() {
                if self.0 == 0 {
                    return Ok(0);
                }
                self.0 -= 1;
                self.1 = format!("{}\t{}\tjpeg\t100\t0.01\n", 200_000 - self.0, self.0 % 1000)
                    .into_bytes();
                self.2 = 0;
            }
            let n = buf.len().min(self.1.len() - self.2);
            buf[..n].copy_from_slice(&self.1[self.2..self.2 + n]);
            self.2 += n;
            Ok(n)
        }
    }
    let r = TraceReader::from_reader(Endless(200_000, Vec::new(), 0), None, "endless").unwrap();
    assert_eq!(r.format(), &Format::Wikimedia);
    let mut calc = cacheoff_trace::ceiling::CeilingCalc::new(1 << 20);
    for rec in r {
        calc.add(&rec.unwrap());
    }
    let c = calc.finish();
    assert_eq!((c.requests, c.objects), (200_000, 1000));
    assert!((c.infinite - 99.5).abs() < 1e-9, "{c:?}");
}
