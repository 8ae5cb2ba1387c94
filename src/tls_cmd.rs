//! `cacheoff tls DIR` and a run's test CA: the certificate authority
//! HTTPS runs trust (docs/https.md), and the fleet's credentials
//! (docs/security.md), made by `crates/tls`.

use crate::Failure;
use anyhow::Context;
use cacheoff_workload::Workload;
use std::path::{Path, PathBuf};

/// Names the test CA's server certificate covers: every origin server's
/// (by the address map's zone) and loopback's.
fn tls_names() -> Vec<String> {
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
) -> Result<Option<std::sync::Arc<cacheoff_tls::Pki>>, Failure> {
    if !workload.robots.tls && tls_dir.is_none() {
        return Ok(None);
    }
    let dir = tls_dir.unwrap_or_else(|| run_dir.join("tls"));
    cacheoff_tls::Pki::load_or_create(&dir, &tls_names())
        .map(|p| Some(std::sync::Arc::new(p)))
        .context("the test CA for HTTPS")
        .map_err(Failure::usage)
}

/// `cacheoff tls DIR`: makes the test CA there (or keeps the one there)
/// and says how to use it.
pub fn tls_init(dir: &Path) -> Result<(), Failure> {
    let existed = dir.join(cacheoff_tls::CA_FILE).exists();
    let pki = cacheoff_tls::Pki::load_or_create(dir, &tls_names())
        .context("the test CA")
        .map_err(Failure::usage)?;
    println!(
        "{} test CA in {}",
        if existed { "the" } else { "a new" },
        dir.display()
    );
    println!(
        "  ca.pem      {} (robots trust it alone)",
        pki.ca_path().display()
    );
    println!(
        "  server.pem  {} (the product's certificate chain: {})",
        pki.cert_path().display(),
        tls_names().join(", ")
    );
    println!("  server.key  {} (its key)", pki.key_path().display());
    println!(
        "then: cacheoff run WORKLOAD --reverse https://HOST:PORT --tls-dir {}",
        dir.display()
    );
    let (fleet, made) = cacheoff_tls::FleetKeys::create_dir(dir)
        .context("the fleet's credentials")
        .map_err(Failure::usage)?;
    println!(
        "{} fleet in {} (mutual TLS between agents and their coordinator; the fleet CA's key is not kept)",
        if made { "a new" } else { "the" },
        fleet.display()
    );
    println!("  ca.pem               the fleet CA both ends trust");
    println!("  agent.pem, .key      every agent's certificate (for servers only)");
    println!("  coordinator.pem, .key  the coordinator's (for clients only)");
    println!(
        "then: cacheoff agent --listen HOST:PORT --fleet-dir {d} ... and cacheoff run ... --agents HOST:PORT --fleet-dir {d}",
        d = dir.display()
    );
    Ok(())
}
