//! Sample traces of our own: [`synthetic`] makes a seeded stream of
//! [`SampleRecord`]s and [`write`] writes them in any [`Format`], so that
//! tests, examples and docs never need a downloaded trace.
//!
//! What each format can express differs: Squid keeps milliseconds, CLF,
//! oracleGeneral and Wikimedia whole seconds; oracleGeneral and Wikimedia
//! have no method or status, so an uncachable request is written there as
//! an object of its own (its [`SampleRecord::id`] is fresh), which never
//! hits either. [`SampleRecord::expected`] is the record a reader gives
//! back for each format.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};

use cacheoff_base::rng::{mix2, seeded, unit_f64, Rng};

use crate::format::{ColumnRef, Field, Format};
use crate::text::url_key;
use crate::{cachable_by_default, hash_bytes, oracle, Method, Record, NEVER};

/// The Unix time of a sample trace's first request in formats with
/// absolute times (Squid, CLF): 2023-11-14 22:13:20 UTC.
pub const EPOCH_S: u64 = 1_700_000_000;

/// One request of a sample trace, with what every format needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleRecord {
    /// Microseconds since the trace's start (the first record is at 0).
    pub time_us: u64,
    /// The object id that formats without URLs carry (oracleGeneral,
    /// Wikimedia); unique to the request when it is uncachable.
    pub id: u64,
    pub host: String,
    /// Path and query, starting with `/`.
    pub path: String,
    /// The client's address.
    pub client: String,
    pub size: u64,
    pub ttfb_us: u64,
    pub method: Method,
    pub status: u16,
}

impl SampleRecord {
    pub fn url(&self) -> String {
        format!("http://{}{}", self.host, self.path)
    }

    /// The record that reading this one back in `format` gives (with the
    /// first record at time 0).
    pub fn expected(&self, format: &Format) -> Record {
        let (key, site) = url_key(&self.url());
        let mut r = crate::text::record(self.time_us, key, self.size);
        r.site = site;
        r.client = hash_bytes(self.client.as_bytes());
        r.method = self.method;
        r.status = Some(self.status);
        r.cachable = Some(cachable_by_default(self.method, Some(self.status)));
        let whole_s = self.time_us / 1_000_000 * 1_000_000;
        match format {
            Format::Squid => {
                r.time_us = self.time_us / 1000 * 1000;
                r.elapsed_us = Some(self.ttfb_us / 1000 * 1000);
            }
            Format::Clf => {
                r.time_us = whole_s;
                (r.key, r.site) = url_key(&self.path);
            }
            Format::OracleGeneral | Format::Wikimedia => {
                r = crate::text::record(whole_s, self.id, self.size);
                if *format == Format::Wikimedia {
                    r.ttfb_us = Some(self.ttfb_us);
                }
            }
            Format::Csv(_) => r.ttfb_us = Some(self.ttfb_us),
        }
        r
    }

    fn image_type(&self) -> &str {
        match self.path.rsplit_once('.') {
            Some((_, ext)) if !ext.contains(['/', '?']) => ext,
            _ => "other",
        }
    }
}

/// Writes the records as one trace in `format`. Text formats stream;
/// oracleGeneral needs each request's next access, so it buffers all the
/// records (a sample is small) and finds them by a backward pass. Sizes
/// over 4 GiB are cut to `u32::MAX` there.
pub fn write(
    format: &Format,
    records: impl Iterator<Item = SampleRecord>,
    out: impl Write,
) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    match format {
        Format::OracleGeneral => {
            let all: Vec<SampleRecord> = records.collect();
            let mut next = vec![None; all.len()];
            let mut last: HashMap<u64, usize> = HashMap::new();
            for (i, r) in all.iter().enumerate().rev() {
                next[i] = last.insert(r.id, i).map(|n| n as u64);
            }
            for (r, n) in all.iter().zip(next) {
                let t = u32::try_from(r.time_us / 1_000_000).unwrap_or(u32::MAX);
                let size = u32::try_from(r.size).unwrap_or(u32::MAX);
                out.write_all(&oracle::encode(t, r.id, size, n))?;
            }
        }
        Format::Wikimedia => {
            writeln!(out, "{}", crate::text::WIKIMEDIA_HEADER.join("\t"))?;
            for r in records {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}",
                    r.time_us / 1_000_000,
                    r.id as i64,
                    r.image_type(),
                    r.size,
                    micros(r.ttfb_us, 1_000_000)
                )?;
            }
        }
        Format::Squid => {
            for r in records {
                let t = EPOCH_S * 1000 + r.time_us / 1000;
                writeln!(
                    out,
                    "{}.{:03} {:>5} {} TCP_MISS/{} {} {} {} - HIER_DIRECT/{} {}",
                    t / 1000,
                    t % 1000,
                    r.ttfb_us / 1000,
                    r.client,
                    r.status,
                    r.size,
                    r.method.token(),
                    r.url(),
                    r.host,
                    mime(r.image_type())
                )?;
            }
        }
        Format::Clf => {
            for r in records {
                writeln!(
                    out,
                    "{} - - [{}] \"{} {} HTTP/1.1\" {} {} \"-\" \"cacheoff-sample\"",
                    r.client,
                    clf_date(EPOCH_S + r.time_us / 1_000_000),
                    r.method.token(),
                    r.path,
                    r.status,
                    r.size
                )?;
            }
        }
        Format::Csv(columns) => write_csv(columns, records, &mut out)?,
    }
    out.flush()
}

fn write_csv(
    columns: &crate::Columns,
    records: impl Iterator<Item = SampleRecord>,
    out: &mut impl Write,
) -> io::Result<()> {
    // Each column's field and header name, gaps of positional specs empty.
    let mut layout: Vec<Option<(Field, String)>> = Vec::new();
    let fields: Vec<Field> = columns.fields().collect();
    let map = columns.map.iter().filter(|(f, _)| fields.contains(f));
    for (i, (f, c)) in map.enumerate() {
        let (at, name) = match c {
            ColumnRef::Name(n) => (i, n.clone()),
            ColumnRef::Index(at) => (*at, f.name().to_string()),
        };
        if layout.len() <= at {
            layout.resize(at + 1, None);
        }
        layout[at] = Some((*f, name));
    }
    let sep = char::from(columns.delimiter);
    let line = |cells: Vec<String>| {
        let quoted: Vec<String> = cells
            .into_iter()
            .map(|c| {
                if c.contains([sep, '"', '\n']) {
                    format!("\"{}\"", c.replace('"', "\"\""))
                } else {
                    c
                }
            })
            .collect();
        quoted.join(&sep.to_string())
    };
    let header = layout
        .iter()
        .map(|c| c.as_ref().map_or("-".to_string(), |(_, n)| n.clone()));
    writeln!(out, "{}", line(header.collect()))?;
    for r in records {
        let cells = layout.iter().map(|c| {
            let Some((f, _)) = c else {
                return String::new();
            };
            match f {
                Field::Time => micros(r.time_us, columns.unit.micros()),
                Field::Url => r.url(),
                Field::Key => hash_bytes(r.url().as_bytes()).to_string(),
                Field::Size => r.size.to_string(),
                Field::Ttfb => micros(r.ttfb_us, columns.ttfb_unit.micros()),
                Field::Status => r.status.to_string(),
                Field::Method => r.method.token().to_string(),
                Field::Client => r.client.clone(),
                Field::Cachable => cachable_by_default(r.method, Some(r.status)).to_string(),
            }
        });
        writeln!(out, "{}", line(cells.collect()))?;
    }
    Ok(())
}

/// Microseconds as an exact decimal of units of `unit_us` microseconds.
fn micros(us: u64, unit_us: u64) -> String {
    let digits = unit_us.ilog10() as usize;
    match digits {
        0 => us.to_string(),
        d => format!("{}.{:0d$}", us / unit_us, us % unit_us),
    }
}

fn mime(image_type: &str) -> String {
    match image_type {
        "html" | "other" => "text/html".into(),
        t => format!("image/{t}"),
    }
}

/// `10/Oct/2000:13:55:36 +0000` for Unix seconds.
fn clf_date(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (eras of 400 years).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{day:02}/{}/{year}:{:02}:{:02}:{:02} +0000",
        MONTHS[month as usize - 1],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A seeded synthetic trace: `requests` requests over `objects` objects
/// with Zipf(`zipf_alpha`) popularity (object 0 the most popular), Poisson
/// arrivals at `rate_per_s` (the first at 0), sizes exponential with mean
/// 13 KB (at least 100 B, at most 1 MB) fixed per object, times to first
/// byte exponential with mean 20 ms, four hosts, twenty clients. One
/// request in ten is uncachable: half are POSTs to an object's URL, half
/// GETs of `?nocache` URLs answered `302`.
pub fn synthetic(
    seed: u64,
    requests: usize,
    objects: usize,
    zipf_alpha: f64,
    rate_per_s: f64,
) -> impl Iterator<Item = SampleRecord> {
    let objects = objects.max(1);
    let mut cdf: Vec<f64> = (1..=objects)
        .scan(0.0, |acc, k| {
            *acc += (k as f64).powf(-zipf_alpha);
            Some(*acc)
        })
        .collect();
    let total = *cdf.last().unwrap_or(&1.0);
    cdf.iter_mut().for_each(|c| *c /= total);
    let mut rng = seeded(seed);
    let mut time_us = 0u64;
    (0..requests).map(move |i| {
        if i > 0 {
            let gap_s = -(1.0 - rng.gen::<f64>()).ln() / rate_per_s.max(1e-9);
            time_us += (gap_s * 1e6) as u64;
        }
        let u: f64 = rng.gen();
        let rank = cdf.partition_point(|&c| c < u);
        let obj = rank.min(objects - 1) as u64;
        let h = mix2(seed, obj);
        let size = (-13_000.0 * (1.0 - unit_f64(h)).ln()).clamp(100.0, 1e6) as u64;
        let ext = ["jpeg", "png", "gif", "html"][(h >> 8) as usize % 4];
        let host = format!("site{}.example", (h >> 16) % 4);
        let ttfb_us = (-20_000.0 * (1.0 - rng.gen::<f64>()).ln()) as u64;
        let client = format!("10.0.0.{}", 1 + rng.gen_range(0..20));
        let kind = rng.gen_range(0..20);
        let (method, status, query, id) = match kind {
            0 => (Method::Post, 200, "", (objects + i) as u64),
            1 => (Method::Get, 302, "?nocache", (objects + i) as u64),
            _ => (Method::Get, 200, "", obj),
        };
        SampleRecord {
            time_us,
            id,
            path: format!("/obj/{obj}.{ext}{query}"),
            host,
            client,
            size,
            ttfb_us,
            method,
            status,
        }
    })
}

/// The `--columns` of the committed CSV sample: other names than ours,
/// milliseconds for the time to first byte.
pub const SAMPLE_COLUMNS: &str = "time=ts,url=url,size=bytes,ttfb=ttfb_ms,status=status,method=method,client=client,ttfb_unit=ms";

/// The requests of the committed samples (`crates/trace/samples/`).
pub fn sample_records() -> impl Iterator<Item = SampleRecord> {
    synthetic(1, 200, 50, 0.8, 20.0)
}

/// The committed sample traces, by file name: one in each format, and the
/// Squid one gzip'd and the CLF one zstd'd (by ruzstd).
/// `cargo run -p cacheoff-trace --example make_samples` writes them.
pub fn sample_files() -> Vec<(&'static str, Format, Vec<u8>)> {
    let csv = Format::Csv(crate::Columns::parse(SAMPLE_COLUMNS).expect("a valid spec"));
    let mut files = Vec::new();
    for (name, format) in [
        ("squid.log", Format::Squid),
        ("clf.log", Format::Clf),
        ("oracle.bin", Format::OracleGeneral),
        ("wikimedia.tsv", Format::Wikimedia),
        ("trace.csv", csv),
    ] {
        let mut bytes = Vec::new();
        write(&format, sample_records(), &mut bytes).expect("writing to memory");
        files.push((name, format, bytes));
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&files[0].2).expect("writing to memory");
    let gz = gz.finish().expect("writing to memory");
    let zst = ruzstd::encoding::compress_to_vec(
        &files[1].2[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    files.push(("squid.log.gz", Format::Squid, gz));
    files.push(("clf.log.zst", Format::Clf, zst));
    files
}

/// The next-access virtual times oracleGeneral would carry for these ids
/// (0-based request numbers, [`NEVER`] for the last use); for tests.
pub fn next_accesses(ids: &[u64]) -> Vec<u64> {
    let mut last: HashMap<u64, u64> = HashMap::new();
    let mut next = vec![NEVER; ids.len()];
    for (i, id) in ids.iter().enumerate().rev() {
        next[i] = last.insert(*id, i as u64).unwrap_or(NEVER);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_dates_format_back() {
        assert_eq!(clf_date(971_211_336), "10/Oct/2000:20:55:36 +0000");
        assert_eq!(clf_date(EPOCH_S), "14/Nov/2023:22:13:20 +0000");
        assert_eq!(clf_date(1_709_208_000), "29/Feb/2024:12:00:00 +0000");
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(micros(1_500_001, 1_000_000), "1.500001");
        assert_eq!(micros(12_345, 1000), "12.345");
        assert_eq!(micros(7, 1), "7");
    }

    #[test]
    fn synthetic_is_seeded_and_zipf_skewed() {
        let a: Vec<_> = synthetic(7, 2000, 100, 1.0, 50.0).collect();
        assert_eq!(a, synthetic(7, 2000, 100, 1.0, 50.0).collect::<Vec<_>>());
        assert_ne!(a, synthetic(8, 2000, 100, 1.0, 50.0).collect::<Vec<_>>());
        assert_eq!(a[0].time_us, 0);
        assert!(a.windows(2).all(|w| w[0].time_us <= w[1].time_us));
        let top = a.iter().filter(|r| r.path.starts_with("/obj/0.")).count();
        let tail = a.iter().filter(|r| r.path.starts_with("/obj/99.")).count();
        assert!(top > 5 * tail.max(1), "{top} {tail}");
        let uncachable = a
            .iter()
            .filter(|r| r.method == Method::Post || r.status == 302)
            .count();
        assert!((100..300).contains(&uncachable), "{uncachable}");
        // 2000 requests at 50/s: about 40 s.
        let end = a.last().unwrap().time_us;
        assert!((30_000_000..50_000_000).contains(&end), "{end}");
    }
}
