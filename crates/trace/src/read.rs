//! [`TraceReader`]: one trace's records, streamed. It owns its source and a
//! line buffer of at most [`MAX_LINE`] bytes; nothing grows with the trace.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::csvfmt::{self, Layout};
use crate::error::{ErrorKind, LineError, Place, TraceError};
use crate::format::{Columns, Format};
use crate::input::{self, Source, PEEK};
use crate::{oracle, text, Record};

/// The longest line read; a longer one is an error, so a trace without
/// line ends cannot take the memory.
pub const MAX_LINE: usize = 1 << 20;

/// The records of one trace, in its order. Times are rebased to the first
/// record's (an earlier time reads as 0). The iterator ends after the
/// first error.
pub struct TraceReader {
    format: Format,
    name: String,
    source: BufReader<Source>,
    /// Lines (text) or records (oracleGeneral) read so far.
    count: u64,
    base: Option<u64>,
    done: bool,
    line: Vec<u8>,
    fields: Vec<String>,
    layout: Option<Layout>,
    /// Whether a data line was seen (a Wikimedia header only comes first).
    data: bool,
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl TraceReader {
    /// Opens a trace file; `None` detects the format.
    pub fn open(path: &Path, format: Option<Format>) -> Result<TraceReader, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| {
            TraceError::new(
                ErrorKind::Io,
                &name,
                Place::File,
                format!("cannot open: {e}"),
            )
        })?;
        TraceReader::from_reader(file, format, &name)
    }

    /// Reads a trace from any reader, `name` standing for it in errors;
    /// `None` detects the format.
    pub fn from_reader(
        r: impl Read + Send + 'static,
        format: Option<Format>,
        name: &str,
    ) -> Result<TraceReader, TraceError> {
        let err = |kind, m: String| TraceError::new(kind, name, Place::File, m);
        let io_err = |e: io::Error| err(ErrorKind::Io, format!("cannot read: {e}"));
        let (source, _) = input::decompress(Box::new(r)).map_err(io_err)?;
        let (format, source) = match format {
            Some(f) => (f, source),
            None => {
                let (prefix, source) = input::peek(source, PEEK).map_err(io_err)?;
                let f = input::detect(&prefix, prefix.len() < PEEK)
                    .map_err(|m| err(ErrorKind::Detect, m))?;
                (f, source)
            }
        };
        Ok(TraceReader {
            format,
            name: name.to_string(),
            source: BufReader::with_capacity(64 * 1024, source),
            count: 0,
            base: None,
            done: false,
            line: Vec::new(),
            fields: Vec::new(),
            layout: None,
            data: false,
        })
    }

    pub fn format(&self) -> &Format {
        &self.format
    }

    /// The name errors give the trace.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn line_error(&self, e: LineError) -> TraceError {
        let mut t = TraceError::new(
            ErrorKind::Syntax,
            &self.name,
            Place::Line(self.count),
            e.message,
        );
        t.column = e.column;
        t
    }

    fn next_binary(&mut self) -> Result<Option<Record>, TraceError> {
        let mut buf = [0u8; oracle::RECORD];
        let place = Place::Record {
            number: self.count + 1,
            offset: self.count * oracle::RECORD as u64,
        };
        let got = oracle::read_one(&mut self.source, &mut buf).map_err(|e| {
            TraceError::new(
                ErrorKind::Io,
                &self.name,
                place.clone(),
                format!("cannot read: {e}"),
            )
        })?;
        self.count += 1;
        match got {
            None => Ok(None),
            Some(Ok(r)) => Ok(Some(r)),
            Some(Err(m)) => Err(TraceError::new(ErrorKind::Syntax, &self.name, place, m)),
        }
    }

    /// Reads the next line into `self.line`, without its end; false at the end.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.line.clear();
        let n = (&mut self.source)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| {
                TraceError::new(
                    ErrorKind::Io,
                    &self.name,
                    Place::Line(self.count + 1),
                    format!("cannot read: {e}"),
                )
            })?;
        if n == 0 {
            return Ok(false);
        }
        self.count += 1;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        } else if self.line.len() > MAX_LINE {
            return Err(self.line_error(LineError::msg(format!(
                "line longer than {} KiB",
                MAX_LINE / 1024
            ))));
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(true)
    }

    fn next_text(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            let line = String::from_utf8_lossy(&self.line);
            if line.trim().is_empty() {
                continue;
            }
            let first = !self.data;
            self.data = true;
            let parsed = match &self.format {
                Format::Squid => text::squid(&line).map(Some),
                Format::Clf => text::clf(&line).map(Some),
                Format::Wikimedia if first && text::is_wikimedia_header(&line) => continue,
                Format::Wikimedia => text::wikimedia(&line).map(Some),
                Format::Csv(columns) => {
                    csv_record(columns, &line, &mut self.fields, &mut self.layout)
                }
                Format::OracleGeneral => unreachable!("binary"),
            };
            match parsed {
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) => continue, // a CSV header
                Err(e) => return Err(self.line_error(e)),
            }
        }
    }
}

/// A CSV line's record, `None` for the header; the first line resolves
/// the layout.
fn csv_record(
    columns: &Columns,
    line: &str,
    fields: &mut Vec<String>,
    layout: &mut Option<Layout>,
) -> Result<Option<Record>, LineError> {
    csvfmt::split(line, char::from(columns.delimiter), fields)?;
    let layout = match layout {
        Some(l) => l,
        None => {
            let (l, header) = Layout::resolve(columns, fields)?;
            let l = layout.insert(l);
            if header {
                return Ok(None);
            }
            l
        }
    };
    layout.record(fields).map(Some)
}

impl Iterator for TraceReader {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let got = match self.format {
            Format::OracleGeneral => self.next_binary(),
            _ => self.next_text(),
        };
        match got {
            Ok(Some(mut r)) => {
                let base = *self.base.get_or_insert(r.time_us);
                r.time_us = r.time_us.saturating_sub(base);
                Some(Ok(r))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
