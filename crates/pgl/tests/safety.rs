//! What a `.pg` file may read and make: `#include`s and `table()` files
//! only from under its directory or an `--include` place, regular files of
//! bounded size; messages never quote a file from elsewhere; arrays and
//! copies of them bounded.

use cacheoff_pgl::{import, import_text, ImportError, Options};
use std::path::{Path, PathBuf};

const SECRET: &str = "SECRET-MARKER-4f1c";

/// `root/w/` holds the workload; `root/out/` files it must not read.
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
    // Neither PGL nor a table: any quote of it would show the marker.
    std::fs::write(out.join("x.pg"), format!("{SECRET} line one\n")).unwrap();
    std::fs::write(
        out.join("t.tbl"),
        format!("time_distr x = {{\n{SECRET} 1\n}}\n"),
    )
    .unwrap();
    Tree { _tmp: tmp, w, out }
}

fn import_in(dir: &Path, text: &str, include: &[PathBuf]) -> Result<(), String> {
    let opts = Options {
        include: include.to_vec(),
        lenient: true,
    };
    import_text(&dir.join("main.pg"), text.into(), &opts)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn includes_outside_the_directory_are_refused_without_quoting_them() {
    let t = tree();
    let out = t.out.display().to_string();
    for name in [
        format!("{out}/x.pg"),
        "../out/x.pg".to_string(),
        "/etc/passwd".to_string(),
    ] {
        let e = import_in(&t.w, &format!("#include \"{name}\"\n"), &[]).unwrap_err();
        assert!(e.contains("main.pg:1:1"), "{name}: {e}");
        assert!(
            e.contains("refused") && e.contains("--include"),
            "{name}: {e}"
        );
        assert!(!e.contains(SECRET) && !e.contains("root:"), "{name}: {e}");
    }
}

#[test]
fn a_symlink_out_of_the_directory_is_refused() {
    let t = tree();
    std::os::unix::fs::symlink(t.out.join("x.pg"), t.w.join("x.pg")).unwrap();
    std::os::unix::fs::symlink(&t.out, t.w.join("lib")).unwrap();
    for name in ["x.pg", "lib/x.pg"] {
        let e = import_in(&t.w, &format!("#include \"{name}\"\n"), &[]).unwrap_err();
        assert!(
            e.contains("refused") && e.contains(&t.out.display().to_string()),
            "{e}"
        );
        assert!(!e.contains(SECRET), "{e}");
    }
}

#[test]
fn an_include_place_admits_its_files_but_they_are_not_quoted() {
    let t = tree();
    let include = [t.out.clone()];
    // Found there, read, and its syntax error has a place but no text.
    let e = import_in(&t.w, "#include \"x.pg\"\n", &include).unwrap_err();
    assert!(
        e.contains(&format!("{}:1:", t.out.join("x.pg").display())),
        "{e}"
    );
    assert!(e.contains("not quoted") && !e.contains(SECRET), "{e}");
    // A table file there that is not a table.
    let e = import_in(
        &t.w,
        "Server S = { xact_think = table(\"t.tbl\"); };\n",
        &include,
    )
    .unwrap_err();
    assert!(
        e.contains("t.tbl: line 2: not a number") && !e.contains(SECRET),
        "{e}"
    );
    // The same files beside the workload are quoted.
    std::fs::copy(t.out.join("x.pg"), t.w.join("x.pg")).unwrap();
    let e = import_in(&t.w, "#include \"x.pg\"\n", &[]).unwrap_err();
    assert!(e.contains(SECRET), "{e}");
    // A file named alone is allowed alone.
    let e = import_in(&t.w, "#include \"../out/t.tbl\"\n", &[t.out.join("x.pg")]).unwrap_err();
    assert!(e.contains("refused"), "{e}");
}

#[test]
fn only_regular_files_are_read() {
    let t = tree();
    // Outside: refused before anything is opened.
    let e = import_in(&t.w, "#include \"/dev/zero\"\n", &[]).unwrap_err();
    assert!(e.contains("refused") && e.contains("--include"), "{e}");
    // Allowed, still not a file.
    let e = import_in(&t.w, "#include \"/dev/zero\"\n", &["/dev".into()]).unwrap_err();
    assert!(
        e.contains("/dev/zero is a character device, not a regular file"),
        "{e}"
    );
    let e = import_in(&t.w, "#include \"environ\"\n", &["/proc/self".into()]).unwrap_err();
    assert!(e.contains("reads as more than its size says"), "{e}");
    // The .pg file itself too.
    let e = import(Path::new("/dev/zero"), &Options::default()).unwrap_err();
    assert!(matches!(e, ImportError::File(_)), "{e}");
}

#[test]
fn arrays_and_their_copies_are_bounded() {
    let t = tree();
    for (text, says) in [
        ("int[] a = 1 .. 2000000;\n", "a range of more than"),
        ("int[] a = 1 .. 900000;\nint[] b = a + a;\n", "more than 1000000 items"),
        ("int[] a = 1 .. 1000;\nint[] b = a ** 1000000;\n", "more than 1000000 items"),
        (
            "int[] a = 1 .. 900000;\nint[] b = [a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a];\n",
            "more than 16000000 values",
        ),
    ] {
        let e = import_in(&t.w, text, &[]).unwrap_err();
        assert!(e.contains(says), "{text}: {e}");
    }
}
