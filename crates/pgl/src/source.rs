//! The files of one import (the main file and what it includes) and
//! messages that point into them: file, line, column and a caret under
//! the place, as pest renders them. A file from outside the workload's
//! directory (an `--include` place) is never quoted: a message about it
//! gives its place alone, since whatever it says may be the file's text.

use crate::ast::Span;
use std::path::{Path, PathBuf};

/// Every file read for one import, by index, and whether its text may
/// be quoted.
#[derive(Debug, Default)]
pub struct Sources {
    files: Vec<(PathBuf, String, bool)>,
}

/// What a message about a file that may not be quoted says instead.
pub const NOT_QUOTED: &str = "a problem in this file, which is outside the workload's directory: its text is not quoted (copy it beside the workload file to see the message)";

impl Sources {
    /// Adds the workload file itself (it may be quoted).
    pub fn add(&mut self, path: PathBuf, text: String) -> usize {
        self.add_named(path, text, true)
    }

    /// Adds a file the workload names; `quotable` as
    /// `cacheoff_workload::files::Named` says.
    pub fn add_named(&mut self, path: PathBuf, text: String, quotable: bool) -> usize {
        self.files.push((path, text, quotable));
        self.files.len() - 1
    }

    pub fn text(&self, file: usize) -> &str {
        &self.files[file].1
    }

    /// Whether messages may quote the file's text.
    pub fn quotable(&self, file: usize) -> bool {
        self.files[file].2
    }

    pub fn path(&self, file: usize) -> &Path {
        &self.files[file].0
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, file: usize, at: usize) -> (usize, usize) {
        let text = self.text(file);
        let at = at.min(text.len());
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

/// A message about a place in a PGL file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    /// Set once rendered against the sources: `file:line:col`, the line
    /// and a caret.
    rendered: Option<String>,
}

impl Diagnostic {
    pub fn at(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
            rendered: None,
        }
    }

    /// A parser's error (any grammar's rules: `parse` has ours).
    pub(crate) fn from_pest<R: pest::RuleType>(
        sources: &Sources,
        file: usize,
        e: pest::error::Error<R>,
    ) -> Diagnostic {
        let (start, end) = match e.location {
            pest::error::InputLocation::Pos(p) => (p, p),
            pest::error::InputLocation::Span((s, e)) => (s, e),
        };
        let message = e.variant.message().into_owned();
        let rendered = e
            .with_path(&sources.path(file).display().to_string())
            .to_string();
        Diagnostic {
            span: Span { file, start, end },
            message,
            rendered: Some(rendered),
        }
    }

    /// The message with its place: `--> file:line:col`, the line and a
    /// caret under the place.
    pub fn render(&self, sources: &Sources) -> String {
        if !sources.quotable(self.span.file) {
            return self.short(sources);
        }
        if let Some(r) = &self.rendered {
            return r.clone();
        }
        let text = sources.text(self.span.file);
        let start = self.span.start.min(text.len());
        let end = self.span.end.clamp(start, text.len());
        let variant = pest::error::ErrorVariant::<()>::CustomError {
            message: self.message.clone(),
        };
        let e = match pest::Span::new(text, start, end) {
            Some(s) if end > start => pest::error::Error::new_from_span(variant, s),
            _ => pest::error::Error::new_from_pos(
                variant,
                pest::Position::new(text, start).expect("inside the text"),
            ),
        };
        e.with_path(&sources.path(self.span.file).display().to_string())
            .to_string()
    }

    /// `file:line:col: message`, on one line.
    pub fn short(&self, sources: &Sources) -> String {
        let (line, col) = sources.line_col(self.span.file, self.span.start);
        let message = if sources.quotable(self.span.file) {
            self.message.lines().next().unwrap_or("")
        } else {
            NOT_QUOTED
        };
        format!(
            "{}:{line}:{col}: {message}",
            sources.path(self.span.file).display(),
        )
    }
}
