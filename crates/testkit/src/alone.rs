//! A test that measures this process (its memory, its threads) in a
//! process of its own: each crate builds one test binary, whose other
//! tests would add their memory and threads to what it counts.

use std::process::Command;

/// Set in the process [`alone`] starts, to the one test it runs.
const ENV: &str = "CACHEOFF_TEST_ALONE";

/// Whether the calling test runs its body here. Called first in a test
/// named `test` (its full name, `module::function`; [`crate::alone!`]
/// writes it): in the test binary's usual run it starts the same binary
/// again with only that test, fails if it did not pass (or did not run),
/// and answers `false`; in that process it answers `true`.
pub fn alone(test: &str) -> bool {
    if std::env::var(ENV).is_ok_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([test, "--exact", "--include-ignored", "--test-threads=1"])
        .env(ENV, test)
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test} in a process of its own: {}\n{stdout}\n{stderr}",
        out.status
    );
    false
}

/// The full name of a test function `f` defined in `module` (what
/// `module_path!()` says there: the test crate's name first, which a
/// test's own name leaves out).
pub fn test_name(module: &str, f: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{f}"),
        None => f.to_string(),
    }
}

/// `alone!(this_test_fn)`: [`alone`] with the test's full name, at the
/// start of a test that measures its process:
/// `if !cacheoff_testkit::alone!(my_test) { return; }`.
#[macro_export]
macro_rules! alone {
    ($f:ident) => {
        $crate::alone(&$crate::test_name(module_path!(), stringify!($f)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_named_by_its_path_below_the_crate() {
        assert_eq!(test_name("proxy::slow_readers", "f"), "slow_readers::f");
        assert_eq!(test_name("kit", "f"), "f");
    }
}
