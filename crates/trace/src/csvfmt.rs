//! CSV traces: fields split with RFC 4180 quoting (a quoted field does not
//! span lines), the header matched against the [`Columns`] once, then one
//! record per line.

use crate::error::LineError;
use crate::format::{ColumnRef, Columns, Field};
use crate::text::{parse_time, record, url_key};
use crate::{cachable_by_default, hash_bytes, Method, Record};

/// Splits one line into `out` at `sep`, honouring `"..."` and `""`.
pub(crate) fn split(line: &str, sep: char, out: &mut Vec<String>) -> Result<(), LineError> {
    out.clear();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
        } else if c == sep {
            out.push(std::mem::take(&mut field));
            at_start = true;
            continue;
        } else if c == '"' && at_start {
            quoted = true;
        } else {
            field.push(c);
        }
        at_start = false;
    }
    if quoted {
        return Err(LineError::msg(format!(
            "field {} has an unterminated quote",
            out.len() + 1
        )));
    }
    out.push(field);
    Ok(())
}

/// The columns resolved against a trace: each field's 0-based column.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    at: Vec<(Field, usize)>,
    columns: Columns,
}

impl Layout {
    /// Resolves the columns against the first line, saying whether that
    /// line is a header (to skip).
    pub fn resolve(columns: &Columns, first: &[String]) -> Result<(Layout, bool), LineError> {
        let mut at = Vec::new();
        let mut by_name = false;
        for (field, col) in &columns.map {
            match col {
                ColumnRef::Index(i) => at.push((*field, *i)),
                ColumnRef::Name(n) => {
                    by_name = true;
                    match first.iter().position(|h| h.trim() == n) {
                        Some(i) => at.push((*field, i)),
                        None if columns.explicit => {
                            return Err(LineError::msg(format!(
                                "the header has no column {n:?} for {} (it has: {})",
                                field.name(),
                                first.join(", ")
                            )))
                        }
                        None => {}
                    }
                }
            }
        }
        if at.iter().any(|(f, _)| *f == Field::Url) {
            at.retain(|(f, _)| *f != Field::Key); // the url gives the key
        }
        let layout = Layout {
            at,
            columns: columns.clone(),
        };
        if !columns.explicit {
            let has = |f| layout.at.iter().any(|(g, _)| *g == f);
            if !(has(Field::Time) && (has(Field::Url) || has(Field::Key)) && has(Field::Size)) {
                return Err(LineError::msg(format!(
                    "the header does not name time, url (or key) and size columns (it has: {}); give --columns",
                    first.join(", ")
                )));
            }
        }
        let header = by_name || {
            let number = |f: Field| {
                layout
                    .get(f, first)
                    .is_some_and(|v| parse_time(v.trim(), 1).is_some())
            };
            !(number(Field::Time) && number(Field::Size))
        };
        Ok((layout, header))
    }

    fn get<'a>(&self, f: Field, fields: &'a [String]) -> Option<&'a str> {
        let (_, i) = self.at.iter().find(|(g, _)| *g == f)?;
        fields.get(*i).map(|s| s.trim())
    }

    /// One data line's record.
    pub fn record(&self, fields: &[String]) -> Result<Record, LineError> {
        let mut r = record(0, 0, 0);
        let (mut explicit_cachable, mut has_request_info) = (None, false);
        for &(field, i) in &self.at {
            let name = field.name();
            let v = fields.get(i).map(|s| s.trim()).ok_or_else(|| {
                LineError::msg(format!(
                    "{} fields, no column {} ({name})",
                    fields.len(),
                    i + 1
                ))
            })?;
            let col = i + 1;
            let bad = |what| LineError::field(col, name, what, v);
            let blank = v.is_empty() || v == "-";
            match field {
                Field::Time => {
                    r.time_us = parse_time(v, self.columns.unit.micros())
                        .ok_or_else(|| bad("is not a time"))?
                }
                Field::Url => (r.key, r.site) = url_key(v),
                Field::Key => {
                    r.key = v
                        .parse::<u64>()
                        .or_else(|_| v.parse::<i64>().map(|k| k as u64))
                        .unwrap_or_else(|_| hash_bytes(v.as_bytes()))
                }
                Field::Size => r.size = v.parse().map_err(|_| bad("is not a number"))?,
                Field::Ttfb if blank => {}
                Field::Ttfb => {
                    r.ttfb_us = Some(
                        parse_time(v, self.columns.ttfb_unit.micros())
                            .ok_or_else(|| bad("is not a time"))?,
                    )
                }
                Field::Status => {
                    has_request_info = true;
                    if !blank {
                        r.status = Some(v.parse().map_err(|_| bad("is not a status"))?);
                    }
                }
                Field::Method => {
                    has_request_info = true;
                    r.method = Method::parse(v);
                }
                Field::Client if blank => {}
                Field::Client => r.client = hash_bytes(v.as_bytes()),
                Field::Cachable if blank => {}
                Field::Cachable => {
                    explicit_cachable = Some(match v.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" | "y" => true,
                        "false" | "0" | "no" | "n" => false,
                        _ => return Err(bad("is not true or false")),
                    })
                }
            }
        }
        r.cachable =
            explicit_cachable.or(has_request_info.then(|| cachable_by_default(r.method, r.status)));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Vec<String> {
        let mut v = Vec::new();
        split(line, ',', &mut v).unwrap();
        v
    }

    #[test]
    fn quoting() {
        assert_eq!(
            fields(r#"a,"b,c","d""e",,"""#),
            ["a", "b,c", "d\"e", "", ""]
        );
        assert_eq!(fields("x"), ["x"]);
        let mut v = Vec::new();
        let e = split(r#"a,"b"#, ',', &mut v).unwrap_err();
        assert_eq!(e.message, "field 2 has an unterminated quote");
    }

    #[test]
    fn named_columns_need_the_header() {
        let c = Columns::parse("time=ts,url=path,size=bytes,unit=ms").unwrap();
        let (l, header) = Layout::resolve(&c, &fields("bytes,ts,path")).unwrap();
        assert!(header);
        let r = l.record(&fields("10,1500,http://h/x")).unwrap();
        assert_eq!((r.time_us, r.size), (1_500_000, 10));
        assert_eq!(r.cachable, None);
        let e = Layout::resolve(&c, &fields("bytes,time,path")).unwrap_err();
        assert!(e.message.contains("no column \"ts\""), "{}", e.message);
    }

    #[test]
    fn positional_columns_and_a_header_guess() {
        let c = Columns::parse("time,-,url,size,status,method,cachable").unwrap();
        let (_, header) = Layout::resolve(&c, &fields("t,x,u,s,st,m,c")).unwrap();
        assert!(header);
        let row = fields("1.5,zz,/a,100,302,GET,");
        let (l, header) = Layout::resolve(&c, &row).unwrap();
        assert!(!header);
        let r = l.record(&row).unwrap();
        assert_eq!(
            (r.time_us, r.status, r.cachable),
            (1_500_000, Some(302), Some(false))
        );
        let r = l.record(&fields("1.5,zz,/a,100,302,GET,yes")).unwrap();
        assert_eq!(r.cachable, Some(true));
        let e = l.record(&fields("1.5,zz,/a,1x")).unwrap_err();
        assert_eq!(e.message, "field 4 (size) is not a number: \"1x\"");
        let e = l.record(&fields("1.5,zz,/a")).unwrap_err();
        assert_eq!(e.message, "3 fields, no column 4 (size)");
    }

    #[test]
    fn default_columns_take_our_names() {
        let c = Columns::default();
        let (l, header) = Layout::resolve(&c, &fields("time,key,size,ttfb")).unwrap();
        assert!(header);
        let r = l.record(&fields("2,77,5,0.25")).unwrap();
        assert_eq!((r.key, r.ttfb_us), (77, Some(250_000)));
        assert!(Layout::resolve(&c, &fields("time,size")).is_err());
    }
}
