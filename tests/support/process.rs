//! Child processes: the `cacheoff` binary as a user runs it, and signals.

use std::process::{Child, Command, Output};
use std::time::Duration;

/// The `cacheoff` binary this test was built with, ready for arguments.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cacheoff"))
}

/// Runs `cacheoff args...` to its end.
pub fn cacheoff(args: &[&str]) -> Output {
    command().args(args).output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Sends `sig` (`-INT`, `-TERM`, `-KILL`) to process `pid`.
pub fn signal(pid: u32, sig: &str) {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
}

/// SIGTERM, then up to `grace` for `child` to exit before it is killed.
pub fn terminate(child: &mut Child, grace: Duration) {
    signal(child.id(), "-TERM");
    if !cacheoff_testkit::within(grace, || matches!(child.try_wait(), Ok(Some(_)))) {
        let _ = child.kill();
        let _ = child.wait();
    }
}
