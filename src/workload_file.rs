//! A workload named on the command line: a built-in, a cacheoff workload
//! file (TOML), or a Web Polygraph workload file (`.pg`, PGL), which is
//! imported first (crates/pgl; docs/pgl.md) and then loaded like a TOML
//! file, so both meet the same checks. Either reads other files (a `.pg`
//! file's includes, `table()` files) only from under its own directory and
//! the `--include` places, through `cacheoff_workload::files`
//! (docs/workload-files.md).

use crate::cli::PglArgs;
use crate::console::print;
use crate::Failure;
use cacheoff_workload::{load_text, Overrides, Workload};
use std::path::Path;

/// Whether `spec` names a PGL file.
pub fn is_pgl(spec: &str) -> bool {
    Path::new(spec)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pg"))
}

/// Imports a PGL file; its mapping, notes and (with `--lenient`) what was
/// left out go to the console when `say` is set.
pub fn import(spec: &str, pgl: &PglArgs, say: bool) -> Result<cacheoff_pgl::Imported, Failure> {
    let opts = cacheoff_pgl::Options {
        include: pgl.include.clone(),
        lenient: pgl.lenient,
    };
    let imported = cacheoff_pgl::import(Path::new(spec), &opts).map_err(Failure::usage)?;
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

/// The workload `spec` names, with the command line's overrides.
pub fn load(spec: &str, o: &Overrides, pgl: &PglArgs) -> Result<Workload, Failure> {
    if is_pgl(spec) {
        let imported = import(spec, pgl, true)?;
        return load_text(&format!("{spec} (imported)"), &imported.toml, o).map_err(Failure::usage);
    }
    cacheoff_workload::load_with(spec, o, &pgl.include).map_err(Failure::usage)
}

/// A Web Polygraph file run, as given, in its run directory.
pub const PGL_SOURCE_FILE: &str = "workload.pg";
/// That file as imported (docs/pgl.md).
pub const PGL_IMPORT_FILE: &str = "workload.toml";

/// A run of a Web Polygraph file keeps it (`workload.pg`) and what it was
/// imported as (`workload.toml`, its includes resolved) in its run
/// directory; failing to is said, not fatal: the manifest has the workload.
pub fn keep_source(spec: &str, pgl: &PglArgs, dir: &Path) {
    if !is_pgl(spec) {
        return;
    }
    // Read as the import read it (a regular file, bounded), not copied.
    let kept = cacheoff_workload::files::Files::new(Path::new(spec), &[])
        .and_then(|f| f.read_main(Path::new(spec)))
        .map_err(anyhow::Error::from)
        .and_then(|text| Ok(std::fs::write(dir.join(PGL_SOURCE_FILE), text)?))
        .and_then(|()| {
            let imported = import(spec, pgl, false).map_err(|f| f.error)?;
            Ok(std::fs::write(dir.join(PGL_IMPORT_FILE), imported.toml)?)
        });
    if let Err(e) = kept {
        print(&format!(
            "cacheoff: cannot keep {spec} in the run directory: {e}"
        ));
    }
}
