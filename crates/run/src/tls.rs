//! A run's test CA: the certificate authority HTTPS runs trust
//! (docs/https.md), made by `crates/tls`.

use crate::RunError;
use cacheoff_workload::Workload;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Names the test CA's server certificate covers: every origin server's
/// (by the address map's zone) and loopback's.
pub fn names() -> Vec<String> {
    let zone = cacheoff_workload::ZONE;
    [format!("*.{zone}"), zone.to_string()]
        .into_iter()
        .chain(["localhost", "127.0.0.1", "::1"].map(String::from))
        .collect()
}

/// The run's test CA, when it needs one: `tls_dir`'s, or a new one in the
/// run directory's `tls/`.
pub fn test_ca(
    workload: &Workload,
    tls_dir: Option<PathBuf>,
    run_dir: &Path,
) -> Result<Option<Arc<cacheoff_tls::Pki>>, RunError> {
    if !workload.robots.tls && tls_dir.is_none() {
        return Ok(None);
    }
    let dir = tls_dir.unwrap_or_else(|| run_dir.join("tls"));
    cacheoff_tls::Pki::load_or_create(&dir, &names())
        .map(|p| Some(Arc::new(p)))
        .map_err(RunError::TestCa)
}
