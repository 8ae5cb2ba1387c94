//! The trace formats and the `--columns` spec of CSV traces.

use crate::error::{ErrorKind, Place, TraceError};

/// A trace format (`--format`).
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    /// Squid's native `access.log`.
    Squid,
    /// Common or Combined Log Format (Apache, nginx).
    Clf,
    /// libCacheSim's binary oracleGeneral: 24-byte little-endian records.
    OracleGeneral,
    /// The Wikimedia CDN 2019 upload trace (TSV).
    Wikimedia,
    /// CSV (or another delimiter) with the columns named by a spec.
    Csv(Columns),
}

impl Format {
    /// The formats' names, as `--format` takes them.
    pub const NAMES: [&'static str; 5] = ["squid", "clf", "oracle-general", "wikimedia", "csv"];

    /// The format of a `--format` name; `csv` has the default columns
    /// (a header naming the fields by their own names).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "squid" => Format::Squid,
            "clf" => Format::Clf,
            "oracle-general" => Format::OracleGeneral,
            "wikimedia" => Format::Wikimedia,
            "csv" => Format::Csv(Columns::default()),
            _ => return None,
        })
    }

    /// `--format NAME [--columns SPEC]` as the command line gives them:
    /// columns only go with `csv`.
    pub fn parse(name: &str, columns: Option<&str>) -> Result<Format, TraceError> {
        let usage = |m: String| TraceError::new(ErrorKind::Usage, "--format", Place::File, m);
        let format = Format::from_name(name).ok_or_else(|| {
            usage(format!(
                "unknown trace format {name:?} (one of: {})",
                Format::NAMES.join(", ")
            ))
        })?;
        match (format, columns) {
            (Format::Csv(_), Some(spec)) => Ok(Format::Csv(Columns::parse(spec)?)),
            (f, None) => Ok(f),
            (_, Some(_)) => Err(usage(format!(
                "--columns only goes with --format csv, not {name}"
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Format::Squid => "squid",
            Format::Clf => "clf",
            Format::OracleGeneral => "oracle-general",
            Format::Wikimedia => "wikimedia",
            Format::Csv(_) => "csv",
        }
    }
}

/// The unit of a time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    S,
    Ms,
    Us,
}

impl TimeUnit {
    pub fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "s" => TimeUnit::S,
            "ms" => TimeUnit::Ms,
            "us" => TimeUnit::Us,
            _ => return None,
        })
    }

    /// Microseconds in one unit.
    pub fn micros(self) -> u64 {
        match self {
            TimeUnit::S => 1_000_000,
            TimeUnit::Ms => 1_000,
            TimeUnit::Us => 1,
        }
    }
}

/// A field of [`crate::Record`] that a CSV column can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The request's time (in `unit`), absolute or relative.
    Time,
    /// The URL (absolute or a path); hashed into the key and site.
    Url,
    /// The object id as an integer (or any text, then hashed).
    Key,
    /// Response bytes.
    Size,
    /// Time to first byte (in `ttfb_unit`).
    Ttfb,
    /// The status code.
    Status,
    /// The method token.
    Method,
    /// The client's address or id (hashed).
    Client,
    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    Cachable,
}

impl Field {
    pub const ALL: [Field; 9] = [
        Field::Time,
        Field::Url,
        Field::Key,
        Field::Size,
        Field::Ttfb,
        Field::Status,
        Field::Method,
        Field::Client,
        Field::Cachable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Time => "time",
            Field::Url => "url",
            Field::Key => "key",
            Field::Size => "size",
            Field::Ttfb => "ttfb",
            Field::Status => "status",
            Field::Method => "method",
            Field::Client => "client",
            Field::Cachable => "cachable",
        }
    }

    pub fn from_name(s: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// Where a field's column is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    /// The column with this name in the header line.
    Name(String),
    /// The 0-based column.
    Index(usize),
}

/// The columns of a CSV trace, from a `--columns` spec.
///
/// The spec is a comma-separated list of items, either all `FIELD=COLUMN`
/// (COLUMN a header name, or `#N` for the N-th column, 1-based) or all
/// bare fields naming the columns in order (`-` skips one), plus options:
/// `unit=s|ms|us` (of `time`, default s), `ttfb_unit=s|ms|us` (default s),
/// `sep=,|tab|;|space|CHAR` (default `,`). Fields: time, url or key, size
/// (these three required), ttfb, status, method, client, cachable. The
/// first line is a header (skipped) when it names the columns; with
/// positions, when its time or size is not a number.
///
/// `Columns::default()` maps every field to the header column of its own
/// name (`time,url,size,...`), the optional ones only when present.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    pub(crate) map: Vec<(Field, ColumnRef)>,
    /// Whether the fields were named explicitly (else the default map).
    pub(crate) explicit: bool,
    pub unit: TimeUnit,
    pub ttfb_unit: TimeUnit,
    pub delimiter: u8,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            map: Field::ALL
                .iter()
                .map(|f| (*f, ColumnRef::Name(f.name().to_string())))
                .collect(),
            explicit: false,
            unit: TimeUnit::S,
            ttfb_unit: TimeUnit::S,
            delimiter: b',',
        }
    }
}

impl Columns {
    /// Parses a `--columns` spec, e.g. `time=ts,url=path,size=bytes,unit=ms`
    /// or `time,-,url,size`.
    pub fn parse(spec: &str) -> Result<Columns, TraceError> {
        let err = |m: String| {
            TraceError::new(
                ErrorKind::Usage,
                "--columns",
                Place::File,
                format!("{m} in {spec:?}"),
            )
        };
        let mut c = Columns {
            map: Vec::new(),
            explicit: true,
            ..Columns::default()
        };
        let (mut named, mut positional) = (false, 0usize);
        for item in spec.split(',').map(str::trim) {
            let (k, v) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            let unit = |v: Option<&str>| {
                v.and_then(TimeUnit::parse)
                    .ok_or_else(|| err(format!("{k} must be s, ms or us")))
            };
            match (k, v) {
                ("unit", v) => c.unit = unit(v)?,
                ("ttfb_unit", v) => c.ttfb_unit = unit(v)?,
                ("sep", Some(v)) => {
                    c.delimiter = match v {
                        "tab" => b'\t',
                        "space" => b' ',
                        "" => b',',
                        s if s.len() == 1 => s.as_bytes()[0],
                        s => return Err(err(format!("sep {s:?} is not one character"))),
                    }
                }
                ("-" | "", None) => positional += 1,
                (k, v) => {
                    let field = Field::from_name(k).ok_or_else(|| {
                        err(format!(
                            "unknown field {k:?} (fields: time, url, key, size, ttfb, status, method, client, cachable; options: unit, ttfb_unit, sep)"
                        ))
                    })?;
                    if c.map.iter().any(|(f, _)| *f == field) {
                        return Err(err(format!("field {k} given twice")));
                    }
                    let column = match v {
                        None => {
                            positional += 1;
                            ColumnRef::Index(positional - 1)
                        }
                        Some(v) => {
                            named = true;
                            match v.strip_prefix('#').map(str::parse::<usize>) {
                                Some(Ok(n)) if n > 0 => ColumnRef::Index(n - 1),
                                Some(_) => return Err(err(format!("bad column number {v:?}"))),
                                None if v.is_empty() => {
                                    return Err(err(format!("field {k} has no column")))
                                }
                                None => ColumnRef::Name(v.to_string()),
                            }
                        }
                    };
                    c.map.push((field, column));
                }
            }
        }
        if named && positional > 0 {
            return Err(err(
                "mix of FIELD=COLUMN and positional fields: use one or the other".into(),
            ));
        }
        for (need, alt) in [
            (Field::Time, None),
            (Field::Url, Some(Field::Key)),
            (Field::Size, None),
        ] {
            let has = |f: Field| c.map.iter().any(|(g, _)| *g == f);
            if !has(need) && !alt.is_some_and(has) {
                let what = alt.map_or(need.name().to_string(), |a| {
                    format!("{} or {}", need.name(), a.name())
                });
                return Err(err(format!("no {what} column")));
            }
        }
        if c.map.iter().any(|(f, _)| *f == Field::Url)
            && c.map.iter().any(|(f, _)| *f == Field::Key)
        {
            return Err(err("url and key both given: the key comes from one".into()));
        }
        Ok(c)
    }

    /// The fields these columns give (the key from `url` when both are
    /// there, as with the default columns).
    pub fn fields(&self) -> impl Iterator<Item = Field> + '_ {
        let url = self.map.iter().any(|(f, _)| *f == Field::Url);
        self.map
            .iter()
            .map(|(f, _)| *f)
            .filter(move |f| !(url && *f == Field::Key))
    }

    /// The spec that [`Columns::parse`] reads back as these columns.
    pub fn spec(&self) -> String {
        let mut items: Vec<String> = self
            .map
            .iter()
            .map(|(f, c)| match c {
                ColumnRef::Name(n) => format!("{}={n}", f.name()),
                ColumnRef::Index(i) => format!("{}=#{}", f.name(), i + 1),
            })
            .collect();
        let unit = |u: TimeUnit| match u {
            TimeUnit::S => "s",
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "us",
        };
        items.push(format!("unit={}", unit(self.unit)));
        items.push(format!("ttfb_unit={}", unit(self.ttfb_unit)));
        let sep = match self.delimiter {
            b'\t' => "tab".to_string(),
            b' ' => "space".to_string(),
            b => (b as char).to_string(),
        };
        if sep != "," {
            items.push(format!("sep={sep}"));
        }
        items.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in Format::NAMES {
            assert_eq!(Format::from_name(n).unwrap().name(), n);
        }
        assert!(Format::from_name("apache").is_none());
        let e = Format::parse("apache", None).unwrap_err();
        assert!(
            e.to_string().contains("unknown trace format \"apache\""),
            "{e}"
        );
        assert!(Format::parse("squid", Some("time,url,size")).is_err());
    }

    #[test]
    fn named_and_positional_specs() {
        let c = Columns::parse("time=ts,url=path,size=bytes,unit=ms").unwrap();
        assert_eq!(c.unit, TimeUnit::Ms);
        assert_eq!(c.map[0], (Field::Time, ColumnRef::Name("ts".into())));
        assert_eq!(Columns::parse(&c.spec()).unwrap(), c);
        let c = Columns::parse("time,-,key,size,sep=tab").unwrap();
        assert_eq!(c.map[1], (Field::Key, ColumnRef::Index(2)));
        assert_eq!(c.delimiter, b'\t');
        let c = Columns::parse("time=#1,key=#3,size=#2").unwrap();
        assert_eq!(c.map[2], (Field::Size, ColumnRef::Index(1)));
    }

    #[test]
    fn bad_specs_say_why() {
        let e = |s: &str| Columns::parse(s).unwrap_err().to_string();
        assert!(
            e("time,url").contains("no size column"),
            "{}",
            e("time,url")
        );
        assert!(e("time=a,size=b").contains("no url or key column"));
        assert!(e("time=a,url,size=b").contains("mix of"));
        assert!(e("time,url,size,colour").contains("unknown field \"colour\""));
        assert!(e("time,url,size,unit=h").contains("unit must be s, ms or us"));
        assert!(e("time,url,url,size").contains("given twice"));
        assert!(e("time,url,key,size").contains("both given"));
        assert!(e("time=#0,url,size").contains("bad column number"));
    }
}
