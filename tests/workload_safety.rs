//! Workload files as an attacker would write them, through the command
//! line: `#include` and `table()` reach only the workload's directory and
//! `--include` places, read only regular files of bounded size, and never
//! quote a file from elsewhere; every number meets its range, the same in
//! `workload check` and `run` (exit 2, no run directory).

use crate::support;

use std::path::{Path, PathBuf};
use support::process::{cacheoff, stderr};

/// In files outside the workload's directory: any quote of them shows it.
const SECRET: &str = "SECRET-MARKER-9d2e";

/// `root/w/` holds workloads; `root/out/` holds files they must not read.
struct Tree {
    _tmp: tempfile::TempDir,
    w: PathBuf,
    out: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (w, out) = (root.join("w"), root.join("out"));
    std::fs::create_dir_all(&w).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("x.pg"), format!("{SECRET} line one\n")).unwrap();
    std::fs::write(out.join("sizes.txt"), format!("{SECRET} 1\n")).unwrap();
    std::fs::write(out.join("good.pg"), "int unused = 1;\n").unwrap();
    std::fs::write(out.join("good.txt"), "1KB 1\n4KB..8KB 1\n").unwrap();
    Tree { _tmp: tmp, w, out }
}

/// A workload file whose one content type's size is `size`.
fn toml_with_size(size: &str) -> String {
    format!(
        "[[content]]\nname = \"a\"\nshare = 1.0\ncachable = 1.0\nsize = \"{size}\"\n\
         [[phases]]\nname = \"a\"\nduration = \"1s\"\n"
    )
}

/// A PGL file: downtime.pg's description after `head`.
fn pg_with(head: &str) -> String {
    let dir = format!("{}/crates/pgl/tests/pgl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(format!("{dir}/downtime.pg")).unwrap();
    let text = text.replace("#include \"include/", &format!("#include \"{dir}/include/"));
    format!("{head}\n{text}")
}

/// The include directory downtime.pg needs.
fn pgl_include() -> String {
    format!(
        "{}/crates/pgl/tests/pgl/include",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// `workload check FILE extra...` and `run FILE extra...` both fail as a
/// usage error saying `needle`, without the secret, and no run directory
/// appears; returns check's message.
fn refused(file: &str, extra: &[&str], needle: &str) -> String {
    let mut check = vec!["workload", "check", file];
    check.extend(extra);
    let o = cacheoff(&check);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{check:?}: {e}");
    assert!(e.contains(needle), "{check:?}: no {needle:?} in {e}");
    assert!(!e.contains(SECRET), "{check:?} quoted a file: {e}");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let mut run = vec!["run", file, "--direct", "-q", "-o", dir.to_str().unwrap()];
    run.extend(extra);
    let o = cacheoff(&run);
    let r = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{run:?}: {r}");
    assert!(r.contains(needle), "{run:?}: no {needle:?} in {r}");
    assert!(!r.contains(SECRET), "{run:?} quoted a file: {r}");
    assert!(!dir.exists(), "{run:?} made a run directory");
    e
}

fn accepted(file: &str, extra: &[&str]) {
    let mut check = vec!["workload", "check", file];
    check.extend(extra);
    let o = cacheoff(&check);
    assert!(o.status.success(), "{check:?}: {}", stderr(&o));
}

#[test]
fn includes_outside_the_workload_directory_are_refused_without_quoting_them() {
    let t = tree();
    let out = t.out.display().to_string();
    let inc = pgl_include();
    for name in ["/etc/passwd", "../out/x.pg", &format!("{out}/x.pg")] {
        let f = write(&t.w, "a.pg", &pg_with(&format!("#include \"{name}\"")));
        let e = refused(&f, &["--include", &inc], "refused");
        assert!(e.contains("--include") && e.contains("a.pg:1:1"), "{e}");
        assert!(!e.contains("root:"), "{e}");
    }
    // /dev/zero: refused as outside, and as no regular file when allowed,
    // before a byte is read.
    let f = write(&t.w, "z.pg", &pg_with("#include \"/dev/zero\""));
    refused(&f, &["--include", &inc], "refused (`--include /dev`");
    refused(
        &f,
        &["--include", &inc, "--include", "/dev"],
        "/dev/zero is a character device, not a regular file",
    );
}

#[test]
fn table_files_outside_the_workload_directory_are_refused_without_quoting_them() {
    let t = tree();
    let out = t.out.display().to_string();
    for name in [
        "/etc/passwd",
        "../out/sizes.txt",
        &format!("{out}/sizes.txt"),
    ] {
        let f = write(&t.w, "a.toml", &toml_with_size(&format!("table({name})")));
        let e = refused(&f, &[], "refused");
        assert!(e.contains("a.toml:5:8: ") && e.contains("--include"), "{e}");
    }
    let f = write(&t.w, "z.toml", &toml_with_size("table(/dev/zero)"));
    refused(&f, &[], "refused");
    refused(
        &f,
        &["--include", "/dev"],
        "/dev/zero is a character device",
    );
    let f = write(&t.w, "p.toml", &toml_with_size("table(/proc/self/environ)"));
    refused(
        &f,
        &["--include", "/proc/self"],
        "reads as more than its size says",
    );
}

#[test]
fn a_symlink_out_of_the_workload_directory_is_refused() {
    let t = tree();
    std::os::unix::fs::symlink(&t.out, t.w.join("lib")).unwrap();
    let f = write(&t.w, "a.toml", &toml_with_size("table(lib/sizes.txt)"));
    let e = refused(&f, &[], "refused");
    assert!(e.contains(&t.out.display().to_string()), "{e}");
    let f = write(&t.w, "a.pg", &pg_with("#include \"lib/x.pg\""));
    refused(&f, &["--include", &pgl_include()], "refused");
}

#[test]
fn include_admits_a_directory_whose_files_are_read_but_never_quoted() {
    let t = tree();
    let out = t.out.to_str().unwrap();
    let f = write(&t.w, "a.pg", &pg_with("#include \"good.pg\""));
    accepted(&f, &["--include", &pgl_include(), "--include", out]);
    let f = write(&t.w, "a.toml", &toml_with_size("table(good.txt)"));
    accepted(&f, &["--include", out]);
    // Found there, but not tables and not PGL: the place, not the text.
    let f = write(&t.w, "b.toml", &toml_with_size("table(sizes.txt)"));
    refused(
        &f,
        &["--include", out],
        "sizes.txt:1: a value that is not one",
    );
    let f = write(&t.w, "b.pg", &pg_with("#include \"x.pg\""));
    refused(
        &f,
        &["--include", &pgl_include(), "--include", out],
        "its text is not quoted",
    );
    // A file named alone is allowed alone.
    let f = write(&t.w, "c.toml", &toml_with_size("table(../out/good.txt)"));
    accepted(&f, &["--include", &format!("{out}/good.txt")]);
    let f = write(&t.w, "d.toml", &toml_with_size("table(../out/sizes.txt)"));
    refused(&f, &["--include", &format!("{out}/good.txt")], "refused");
}

#[test]
fn every_number_out_of_its_range_is_refused_by_check_and_run() {
    let t = tree();
    let phase = "[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
    for (text, needle) in [
        (
            "peak_rate = \"1e300/s\"\n",
            "peak_rate = 1e300/s: must be 0/s < x ≤ 1000000/s",
        ),
        ("peak_rate = \"NaN/s\"\n", "NaN"),
        ("peak_rate = \"inf/s\"\n", "inf"),
        ("peak_rate = \"-5/s\"\n", "-5/s"),
        (
            "[robots]\ncount = 100000000\n",
            "robots.count = 100000000: must be 1 ≤ x ≤ 100000",
        ),
        (
            "[servers]\ncount = 100000\n",
            "servers.count = 100000: must be 1 ≤ x ≤ 8192",
        ),
        (
            "[servers]\nper_robot = nan\n",
            "servers.per_robot = NaN: must be 0 ≤ x ≤ 100",
        ),
        (
            "[popularity]\nrecurrence = inf\n",
            "popularity.recurrence = inf: must be 0 ≤ x ≤ 1",
        ),
        (
            "[robots]\nmax_conns = 100000\n",
            "robots.max_conns = 100000: must be 1 ≤ x ≤ 1000",
        ),
        (
            "interval = \"1day\"\n",
            "interval = 1day: must be 100ms ≤ x ≤ 1h",
        ),
        (
            "[timeouts]\nconnect = \"0s\"\n",
            "timeouts.connect = 0s: must be 0s < x ≤ 1day",
        ),
        (
            "[requests]\npost_body = \"exp(2GB)\"\n",
            "requests.post_body = exp(2GB): must be 0B ≤ x ≤ 1GB",
        ),
    ] {
        let f = write(&t.w, "n.toml", &format!("{text}{phase}"));
        refused(&f, &[], needle);
    }
    let f = write(
        &t.w,
        "long.toml",
        "[[phases]]\nname = \"a\"\nduration = \"400day\"\n",
    );
    refused(
        &f,
        &[],
        "phases.duration = 400day (phase \"a\"): must be 0s < x ≤ 365day",
    );
    let f = write(&t.w, "size.toml", &toml_with_size("exp(2TB)"));
    refused(&f, &[], "content.size = exp(2TB) (a): must be 0B ≤ x ≤ 1TB");
    // From a .pg file: the rate it gives meets the same range.
    let fast = pg_with("").replace("sec / 3);", "sec / 3000000000);");
    let f = write(&t.w, "fast.pg", &fast);
    refused(
        &f,
        &["--include", &pgl_include()],
        "must be 0/s < x ≤ 1000000/s",
    );
}

#[test]
fn settings_from_the_command_line_meet_the_same_ranges() {
    let t = tree();
    let out = t.w.join("never");
    for (flag, value, needle) in [
        (
            "--rate",
            "1e300/s",
            "peak_rate = 1e300/s (--rate): must be 0/s < x ≤ 1000000/s",
        ),
        ("--peak-rate", "1e300/s", "(--rate): must be"),
        (
            "--robots",
            "100000000",
            "robots.count = 100000000 (--robots): must be 1 ≤ x ≤ 100000",
        ),
        (
            "--servers",
            "100000",
            "servers.count = 100000 (--servers): must be 1 ≤ x ≤ 8192",
        ),
        (
            "--fill-rate",
            "5e6/s",
            "fill_rate = 5000000/s (--fill-rate): must be",
        ),
        (
            "--max-conns",
            "0",
            "robots.max_conns = 0 (--max-conns): must be 1 ≤ x ≤ 1000",
        ),
        (
            "--cache-size",
            "0",
            "cache_size = 0B (--cache-size): must be 0B < x",
        ),
        (
            "--think-time",
            "2h",
            "servers.think_time = const(2h) (--think-time): must be",
        ),
    ] {
        let args = [
            "run",
            "simple",
            flag,
            value,
            "--direct",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ];
        let o = cacheoff(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: no {needle:?} in {e}");
        assert!(!out.exists(), "{args:?} made a run directory");
    }
}
