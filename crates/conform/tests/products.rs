//! The suite against the real products of the lineup (Squid, Varnish,
//! nginx, Traffic Server, as `crates/products` configures them), in each
//! mode their product file lists. Ignored unless asked for: they must be
//! installed (ops/install-products.sh); asked for, a product missing
//! fails. It asserts only that every check
//! ran and the report adds up; the scores it prints are what
//! docs/conformance.md's product table records.
//!
//! `cargo test -p cacheoff-conform --test products -- --ignored --nocapture`

use cacheoff_conform::{Mode, Origin, Target};
use cacheoff_products::{Mode as PMode, ProductSpec, Settings};
use cacheoff_testkit::free_port;
use cacheoff_workload::AddrMap;
use std::sync::Arc;
use std::time::Duration;

fn run(product: &str, mode: Mode) {
    let spec = ProductSpec::builtin(product).unwrap();
    let pmode = match mode {
        Mode::Forward => PMode::Forward,
        Mode::Reverse => PMode::Reverse,
    };
    // Asked for by name (CI does): a product missing is a failure, not a
    // quiet pass.
    assert!(
        spec.supports(pmode),
        "{product} has no {} mode in its product file",
        mode.name()
    );
    assert!(
        spec.is_installed(std::path::Path::new("/bin/true")),
        "{product} is not installed: ops/install-products.sh installs it"
    );
    let origin = Arc::new(Origin::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let map = AddrMap::for_servers(&[origin.addr()]);
    let name = map.entries()[0].0.clone();
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], free_port())),
        mem: 64 << 20,
        disk: None,
        addrmap: (mode == Mode::Reverse).then_some(&map),
        parent: None,
        dir: dir.path().join(product),
        exe: "/bin/true".into(),
        tls: None,
    };
    let mut running = spec.start(pmode, &settings).unwrap();
    running.wait_ready(Duration::from_secs(60)).unwrap();
    let target = Target {
        mode,
        proxy: settings.listen,
        origin: origin.addr(),
        host: Some(name),
    };
    let report = cacheoff_conform::run(target, origin);
    let _ = running.stop();
    let expected = cacheoff_conform::catalog()
        .iter()
        .filter(|c| c.applies_to(mode))
        .count();
    assert_eq!(report.checks.len(), expected);
    assert_eq!(report.passed + report.failed + report.optional, expected);
    let out = std::env::temp_dir().join(format!("conform-{product}-{}.json", mode.name()));
    std::fs::write(&out, report.json()).unwrap();
    let table = report.table();
    println!(
        "== {product} {}: {}\n{}",
        mode.name(),
        out.display(),
        table.lines().last().unwrap_or("")
    );
    for c in report.checks.iter().filter(|c| c.result.name() != "pass") {
        println!("  {:<8} {:<32} {}", c.result.name(), c.id, c.detail);
    }
}

#[test]
#[ignore = "needs the products installed (ops/install-products.sh)"]
fn squid() {
    run("squid", Mode::Forward);
    run("squid", Mode::Reverse);
}

#[test]
#[ignore = "needs the products installed (ops/install-products.sh)"]
fn varnish() {
    run("varnish", Mode::Reverse);
}

#[test]
#[ignore = "needs the products installed (ops/install-products.sh)"]
fn nginx() {
    // Forward only as a child of a parent proxy: a surrogate here.
    run("nginx", Mode::Reverse);
}

#[test]
#[ignore = "needs the products installed (ops/install-products.sh)"]
fn trafficserver() {
    run("trafficserver", Mode::Forward);
    run("trafficserver", Mode::Reverse);
}
