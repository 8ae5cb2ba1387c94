//! `cacheoff tls DIR`: the test CA HTTPS runs trust (docs/https.md;
//! a run's own is `cacheoff_run::tls`), and the fleet's credentials
//! (docs/security.md), made by `crates/tls`.

use crate::Failure;
use anyhow::Context;
use cacheoff_run::tls::names as tls_names;
use std::path::Path;

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
