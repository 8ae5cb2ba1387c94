//! Web Polygraph's workload files (PGL, `.pg`) in cacheoff's workload
//! model. A file is parsed ([`parse`], with pest), run ([`eval`]: its
//! declarations, assignments, `#include`s, `use()` and `schedule()`),
//! then lowered ([`lower`]) into the TOML a cacheoff workload file holds,
//! so one loader checks both. What cacheoff does not model is named with
//! its file, line and column: an import refuses it, or with `lenient`
//! warns and goes on. docs/pgl.md maps the language onto the model.
//!
//! Every file an import reads goes through one
//! `cacheoff_workload::files::Files`: the `.pg` file itself, and its
//! `#include`s and `table()` files only from under its directory or an
//! `--include` place ([`Options::include`]), each a regular file of
//! bounded size; messages never quote a file from outside its directory.

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

use cacheoff_workload::files::{FileError, Files};
use source::{Diagnostic, Sources};
use std::path::{Path, PathBuf};

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where `#include`s and `table()` files are looked for after the
    /// file's own directory, and the only places outside it they may be
    /// read from: directories, or files allowed alone.
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
    /// The file, an `--include` place, or a file it names, refused or
    /// unreadable.
    #[error("{0}")]
    File(#[from] FileError),
    /// A syntax or type error, rendered with its place.
    #[error("{0}")]
    Pgl(String),
    /// Constructs cacheoff does not model, each with its place.
    #[error("{} in this file {} not modelled by cacheoff (--lenient warns and goes on):\n{}", .0.len(), if .0.len() == 1 { "is" } else { "are" }, .0.join("\n"))]
    Unmodelled(Vec<String>),
}

/// Imports the PGL file at `path`.
pub fn import(path: &Path, opts: &Options) -> Result<Imported, ImportError> {
    let text = Files::new(path, &opts.include)?.read_main(path)?;
    import_text(path, text, opts)
}

/// Runs PGL text (named `path` in messages and for its `#include`s): what
/// it uses and schedules, and its variables.
pub fn evaluate(
    path: &Path,
    text: String,
    opts: &Options,
) -> Result<(Sources, eval::Program), ImportError> {
    let files = Files::new(path, &opts.include)?;
    files.charge(text.len());
    let mut sources = Sources::default();
    let file = sources.add(path.to_path_buf(), text);
    let program = (|| {
        let stmts = parse::parse(&sources, file)?;
        let mut interp = eval::Interp::new(&mut sources, &files);
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
