//! After a run: its summary on the console, the embedded proxy's
//! counters, the report card, and the verdict by the cache-off's rules
//! (`cacheoff_rundir::rules`, as the report card, the executive summary
//! and the lineup's summary judge them), which is the exit status.

use crate::{console, RunError, RunResult};
use cacheoff_report::ReportError;
use cacheoff_rundir::rules::{self, Facts};
use cacheoff_rundir::RunDir;
use std::path::{Path, PathBuf};

/// Says how the run went (the summary table, the embedded proxy's
/// counters, where the run and its report card are) and judges it: an
/// error when it is disqualified.
pub fn conclude(
    r: &RunResult,
    embedded: Option<cacheoff_proxy::Proxy>,
    quiet: bool,
) -> Result<(), RunError> {
    let dir = &r.dir;
    print_summary(r, quiet);
    if let Some(p) = embedded {
        console::print(&console::counters_line(&p));
        p.stop();
    }
    console::print(&format!("run directory: {}", dir.display()));
    // The measurements are safe on disk already; a report that fails to
    // render is reported but does not fail the run.
    match report_card(dir) {
        Ok(path) => console::print(&format!("report card: {}", path.display())),
        Err(e) => warn_no_card(&e),
    }
    let why = disqualified(dir);
    if !why.is_empty() {
        return Err(RunError::Disqualified(why));
    }
    Ok(())
}

/// The end-of-run table (after a blank line when interval lines came
/// before it).
pub fn print_summary(r: &RunResult, quiet: bool) {
    if !quiet {
        console::print("");
    }
    console::print(&console::summary_table(&r.summary));
}

/// Renders the report card of the run in `dir` (`report.html`).
pub fn report_card(dir: &Path) -> Result<PathBuf, ReportError> {
    cacheoff_report::html::write(&RunDir::open(dir)?)
}

/// Says that the report card could not be rendered (which fails nothing).
pub fn warn_no_card(e: &ReportError) {
    console::print(&format!(
        "cacheoff: warning: cannot render the report card: {}",
        console::chain(e)
    ));
}

/// Why the run in `dir` fails a cache-off rule (errors, hit ratio), if it
/// does; a directory that cannot be read is judged by no rule.
pub fn disqualified(dir: &Path) -> Vec<String> {
    RunDir::open(dir)
        .map(|run| rules::disqualified(&Facts::of(&run)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_a_run_breaks_no_rule() {
        let dir = tempfile::tempdir().unwrap();
        assert!(disqualified(dir.path()).is_empty());
        assert!(report_card(dir.path()).is_err());
    }
}
