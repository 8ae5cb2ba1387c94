//! The one error of reading a trace: where it happened and what was wrong.

use std::fmt;

/// What went wrong, for callers that count or branch (never on the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be opened or read, or did not decompress.
    Io,
    /// The format was not given and could not be told from the data.
    Detect,
    /// A `--format` or `--columns` argument is wrong.
    Usage,
    /// A line or record does not follow its format.
    Syntax,
}

/// Where in the trace: a line (text formats) or a record (binary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The file as a whole.
    File,
    /// A 1-based line.
    Line(u64),
    /// A 1-based oracleGeneral record and its byte offset.
    Record { number: u64, offset: u64 },
}

/// An error reading a trace, displayed as `access.log:17: field 5 (size)
/// is not a number: "12a"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TraceError {
    pub kind: ErrorKind,
    /// The trace's name (its path, or what `from_reader` was given).
    pub file: String,
    pub place: Place,
    /// The 1-based field (column) when known.
    pub column: Option<usize>,
    pub message: String,
}

impl TraceError {
    pub(crate) fn new(kind: ErrorKind, file: &str, place: Place, message: String) -> Self {
        TraceError {
            kind,
            file: file.to_string(),
            place,
            column: None,
            message,
        }
    }

    /// The 1-based line, or record number for oracleGeneral; 0 for the file.
    pub fn line(&self) -> u64 {
        match self.place {
            Place::File => 0,
            Place::Line(n) | Place::Record { number: n, .. } => n,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place {
            Place::File => write!(f, "{}: {}", self.file, self.message),
            Place::Line(n) => write!(f, "{}:{n}: {}", self.file, self.message),
            Place::Record { number, offset } => write!(
                f,
                "{}: record {number} (byte {offset}): {}",
                self.file, self.message
            ),
        }
    }
}

/// A problem within one line, before the reader adds the file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    pub column: Option<usize>,
    pub message: String,
}

impl LineError {
    pub fn msg(message: impl Into<String>) -> Self {
        LineError {
            column: None,
            message: message.into(),
        }
    }

    /// `field 5 (size) is not a number: "12a"`.
    pub fn field(column: usize, name: &str, what: &str, value: &str) -> Self {
        let shown: String = value.chars().take(80).collect();
        LineError {
            column: Some(column),
            message: format!("field {column} ({name}) {what}: {shown:?}"),
        }
    }
}
