//! What the product tests share: one request through a product and its
//! reply (`cacheoff_testkit`'s client), free ports, the cacheoff binary, a
//! product that may be missing, temporary run directories, waiting for a
//! product's log.

// Each test file uses some of these.
#![allow(dead_code)]

use cacheoff_products::{Mode, ProductSpec, Running};
pub use cacheoff_testkit::{free_port, Response};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const READY: Duration = Duration::from_secs(60);

/// One GET on a new connection.
pub fn get(proxy: SocketAddr, target: &str, host: &str) -> Response {
    request(proxy, "GET", target, host, &[], "")
}

/// One request with extra header lines (`Name: value`) and a body (sent
/// with its length when not empty), on a new connection.
pub fn request(
    proxy: SocketAddr,
    method: &str,
    target: &str,
    host: &str,
    headers: &[String],
    body: &str,
) -> Response {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    head.push_str(body);
    cacheoff_testkit::exchange(proxy, head.as_bytes())
}

/// The cacheoff binary for the reference proxy: `$CACHEOFF_EXE`, else the
/// one cargo built next to this test.
pub fn cacheoff_exe() -> PathBuf {
    if let Some(p) = std::env::var_os("CACHEOFF_EXE") {
        return PathBuf::from(p);
    }
    let me = std::env::current_exe().unwrap();
    me.parent().unwrap().parent().unwrap().join("cacheoff")
}

/// The product's spec; a product that is not there fails the test (the
/// tests run only when asked for, as CI does, which installs them).
pub fn product(name: &str, mode: Mode) -> ProductSpec {
    product_with(name, mode, false)
}

/// The product's spec for a start with a parent proxy (or without:
/// `parent` false); a product that is not there fails the test, and the
/// reference proxy must know the flags the start needs.
pub fn product_with(name: &str, mode: Mode, parent: bool) -> ProductSpec {
    let spec = ProductSpec::builtin(name).unwrap();
    let exe = cacheoff_exe();
    if let Err(e) = spec.installed_binary(&exe) {
        panic!(
            "{e}; ops/install-products.sh installs the products{}",
            if name == "reference" {
                ", and `cargo build` the cacheoff binary (or set CACHEOFF_EXE)"
            } else {
                ""
            }
        );
    }
    if name == "reference" {
        let help = std::process::Command::new(&exe)
            .args(["proxy", "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let flags = [
            (mode == Mode::Reverse).then_some("--origin-map"),
            parent.then_some("--parent"),
        ];
        if let Some(flag) = flags.into_iter().flatten().find(|f| !help.contains(f)) {
            panic!(
                "{} has no {flag}: build the current cacheoff",
                exe.display()
            );
        }
    }
    spec
}

/// A temporary run directory, removed at the end unless
/// `CACHEOFF_KEEP_RUN_DIRS` is set (then its path is printed).
pub struct RunDir(Option<tempfile::TempDir>);

impl RunDir {
    pub fn path(&self) -> &std::path::Path {
        self.0.as_ref().unwrap().path()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if std::env::var_os("CACHEOFF_KEEP_RUN_DIRS").is_some() {
            eprintln!("kept {}", self.0.take().unwrap().keep().display());
        }
    }
}

pub fn run_dir() -> RunDir {
    let d = tempfile::tempdir().unwrap();
    // Products that switch users as root must reach it.
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    RunDir(Some(d))
}

/// Waits for the log to show at least `requests` requests and `hits` hits
/// (products write it late, and a miss's line may come after a later hit's).
pub fn log_counts(r: &Running, requests: u64, hits: u64) -> cacheoff_products::LogCounts {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let c = r.hits_from_log().unwrap();
        if (c.requests >= requests && c.hits >= hits) || Instant::now() >= deadline {
            return c;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
