//! Web Polygraph's workload files (PGL, `.pg`) in cacheoff's workload
//! model. A file is parsed ([`parse`], with pest), run ([`eval`]: its
//! declarations, assignments, `#include`s, `use()` and `schedule()`),
//! then lowered ([`lower`]) into the TOML a cacheoff workload file holds,
//! so one loader checks both. What cacheoff does not model is named with
//! its file, line and column: an import refuses it, or with `lenient`
//! warns and goes on. docs/pgl.md maps the language onto the model.

pub mod ast;
mod calls;
mod convert;
pub mod eval;
mod lower;
mod ops;
mod origin;
mod params;
pub mod parse;
mod phases;
mod requests;
pub mod source;
mod types;
pub mod value;

use source::{Diagnostic, Sources};
use std::path::{Path, PathBuf};

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where `#include`s are looked for after the file's own directory.
    pub include: Vec<PathBuf>,
    /// Warn about what cacheoff does not model instead of refusing it.
    pub lenient: bool,
}

/// A PGL file as a cacheoff workload.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The workload file's text (TOML).
    pub toml: String,
    /// Where the file's addresses went.
    pub mapping: Vec<String>,
    /// Things to know that are not errors, each with its place.
    pub notes: Vec<String>,
    /// What cacheoff does not model (only with `lenient`; otherwise these
    /// are the error).
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A syntax or type error, rendered with its place.
    #[error("{0}")]
    Pgl(String),
    /// Constructs cacheoff does not model, each with its place.
    #[error("{} in this file {} not modelled by cacheoff (--lenient warns and goes on):\n{}", .0.len(), if .0.len() == 1 { "is" } else { "are" }, .0.join("\n"))]
    Unmodelled(Vec<String>),
}

/// Imports the PGL file at `path`.
pub fn import(path: &Path, opts: &Options) -> Result<Imported, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    import_text(path, text, opts)
}

/// Runs PGL text (named `path` in messages and for its `#include`s): what
/// it uses and schedules, and its variables.
pub fn evaluate(
    path: &Path,
    text: String,
    opts: &Options,
) -> Result<(Sources, eval::Program), ImportError> {
    let mut sources = Sources::default();
    let file = sources.add(path.to_path_buf(), text);
    let program = (|| {
        let stmts = parse::parse(&sources, file)?;
        let mut interp = eval::Interp::new(
            &mut sources,
            eval::IncludePath {
                dirs: opts.include.clone(),
            },
        );
        interp.run(&stmts)?;
        Ok::<_, Diagnostic>(interp.finish())
    })();
    match program {
        Ok(p) => Ok((sources, p)),
        Err(d) => Err(ImportError::Pgl(d.render(&sources))),
    }
}

/// Imports PGL text, named `path` in messages and for its `#include`s.
pub fn import_text(path: &Path, text: String, opts: &Options) -> Result<Imported, ImportError> {
    let stem = path
        .file_stem()
        .map_or_else(|| "pgl".to_string(), |s| s.to_string_lossy().into_owned());
    let (sources, program) = evaluate(path, text, opts)?;
    let lowered =
        lower::lower(&program, &stem).map_err(|d| ImportError::Pgl(d.render(&sources)))?;
    let short = |d: &Diagnostic| d.short(&sources);
    let unmodelled: Vec<String> = lowered.unmodelled.iter().map(short).collect();
    if !unmodelled.is_empty() && !opts.lenient {
        return Err(ImportError::Unmodelled(unmodelled));
    }
    let mut notes: Vec<String> = program.notes.iter().map(short).collect();
    notes.extend(lowered.notes.iter().map(short));
    let toml = toml::to_string(&lowered.table).map_err(|e| ImportError::Pgl(e.to_string()))?;
    Ok(Imported {
        toml,
        mapping: lowered.mapping,
        notes,
        warnings: unmodelled,
    })
}
