//! A workload named on the command line: a built-in, a cacheoff workload
//! file (TOML), or a Web Polygraph workload file (`.pg`, PGL), which is
//! imported first (crates/pgl; docs/pgl.md) and then loaded like a TOML
//! file, so both meet the same checks. Either reads other files (a `.pg`
//! file's includes, `table()` files) only from under its own directory and
//! the `--include` places, through `cacheoff_workload::files`
//! (docs/workload-files.md).

use crate::console::print;
use crate::RunError;
use cacheoff_pgl::Options;
use cacheoff_workload::{load_text, Overrides, Workload};
use std::path::{Path, PathBuf};

/// Whether `spec` names a PGL file.
pub fn is_pgl(spec: &str) -> bool {
    Path::new(spec)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pg"))
}

/// Imports a PGL file; its mapping, notes and (with `--lenient`) what was
/// left out go to the console when `say` is set.
pub fn import(spec: &str, pgl: &Options, say: bool) -> Result<cacheoff_pgl::Imported, RunError> {
    let imported = cacheoff_pgl::import(Path::new(spec), pgl)?;
    if say {
        for line in &imported.mapping {
            print(&format!("{spec}: {line}"));
        }
        for n in &imported.notes {
            print(&format!("note: {n}"));
        }
        for w in &imported.warnings {
            print(&format!("warning: {w} (left out: --lenient)"));
        }
    }
    Ok(imported)
}

/// A workload as named on the command line, read once: every command
/// (`run`, `ab`, `peak`, `lineup`) resolves it here, so a `.pg` file
/// works wherever a built-in or a TOML file does, and is imported (and
/// its mapping said) once however many runs a command makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    spec: String,
    include: Vec<PathBuf>,
    /// A PGL file's import (TOML text).
    imported: Option<String>,
}

impl Source {
    /// Reads `spec`: a `.pg` file is imported now (its includes from its
    /// own directory and `pgl.include`).
    pub fn open(spec: &str, pgl: &Options) -> Result<Source, RunError> {
        let imported = if is_pgl(spec) {
            Some(import(spec, pgl, true)?.toml)
        } else {
            None
        };
        Ok(Source {
            spec: spec.to_string(),
            include: pgl.include.clone(),
            imported,
        })
    }

    /// As the command line named it.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The workload with `o`'s settings over its own.
    pub fn load(&self, o: &Overrides) -> Result<Workload, RunError> {
        Ok(match &self.imported {
            Some(toml) => load_text(&format!("{} (imported)", self.spec), toml, o)?,
            None => cacheoff_workload::load_with(&self.spec, o, &self.include)?,
        })
    }

    /// The workload with `o`'s settings, checked to be runnable as it
    /// stands (a goal phase needs a cache size, ...).
    pub fn runnable(&self, o: &Overrides) -> Result<Workload, RunError> {
        let w = self.load(o)?;
        w.check_runnable()?;
        Ok(w)
    }

    /// A run of a Web Polygraph file keeps it (`workload.pg`) and what it
    /// was imported as (`workload.toml`, its includes resolved) in its run
    /// directory `dir`; failing to is said, not fatal: the manifest has
    /// the workload.
    pub fn keep(&self, dir: &Path) {
        let Some(imported) = &self.imported else {
            return;
        };
        let spec = Path::new(&self.spec);
        // Read as the import read it (a regular file, bounded), not copied.
        let kept = cacheoff_workload::files::Files::new(spec, &[])
            .and_then(|f| f.read_main(spec))
            .map_err(|e| e.to_string())
            .and_then(|text| {
                std::fs::write(dir.join(PGL_SOURCE_FILE), text).map_err(|e| e.to_string())
            })
            .and_then(|()| {
                std::fs::write(dir.join(PGL_IMPORT_FILE), imported).map_err(|e| e.to_string())
            });
        if let Err(e) = kept {
            print(&format!(
                "cacheoff: cannot keep {} in the run directory: {e}",
                self.spec
            ));
        }
    }
}

/// The workload `spec` names, with the command line's overrides.
pub fn load(spec: &str, o: &Overrides, pgl: &Options) -> Result<Workload, RunError> {
    Source::open(spec, pgl)?.load(o)
}

/// A Web Polygraph file run, as given, in its run directory.
pub const PGL_SOURCE_FILE: &str = "workload.pg";
/// That file as imported (docs/pgl.md).
pub const PGL_IMPORT_FILE: &str = "workload.toml";
