//! PGL files written for the project, imported: each built-in workload's
//! PGL description gives the built-in model; every construct evaluates as
//! the language says; what cacheoff does not model is named with its
//! place; errors point at the place with a caret.

use cacheoff_pgl::value::{Value, Q};
use cacheoff_pgl::{import, import_text, ImportError, Options};
use cacheoff_workload::{load, load_text, Overrides};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pgl")
}

fn opts() -> Options {
    Options {
        include: vec![dir().join("elsewhere")],
        lenient: false,
    }
}

/// The overrides every fill workload needs.
fn overrides() -> Overrides {
    let mut o = Overrides::default();
    o.set("cache-size", "1GB").unwrap();
    o
}

#[test]
fn each_builtin_s_pgl_description_imports_to_the_builtin_model() {
    for name in [
        "polymix-3",
        "polymix-4",
        "datacomm-1",
        "webaxe-4",
        "downtime",
        "polyfill",
    ] {
        let path = dir().join(format!("{name}.pg"));
        let imported = import(&path, &opts()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut ours = load_text(&format!("{name}.toml"), &imported.toml, &overrides())
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", imported.toml));
        let builtin = load(name, &overrides()).unwrap();
        ours.name = builtin.name.clone();
        ours.description = builtin.description.clone();
        assert_eq!(ours, builtin, "{name}:\n{}", imported.toml);
        // And with the run parameters given on the command line.
        let mut o = overrides();
        o.set("rate", "800/s").unwrap();
        o.set("fill-rate", "200/s").unwrap();
        let mut ours = load_text(&format!("{name}.toml"), &imported.toml, &o).unwrap();
        let builtin = load(name, &o).unwrap();
        ours.name = builtin.name.clone();
        ours.description = builtin.description.clone();
        assert_eq!(ours, builtin, "{name} at 800/s");
    }
}

fn globals() -> std::collections::BTreeMap<String, Value> {
    let path = dir().join("constructs.pg");
    let text = std::fs::read_to_string(&path).unwrap();
    let (_, p) = cacheoff_pgl::evaluate(&path, text, &opts()).unwrap_or_else(|e| panic!("{e}"));
    p.globals
}

fn int(v: &Value) -> f64 {
    match v {
        Value::Int(Q { k, param: None }) => *k,
        v => panic!("not an int: {v:?}"),
    }
}

#[test]
fn constructs_evaluate_as_the_language_says() {
    let g = globals();
    let num = |name: &str| match &g[name] {
        Value::Int(q) | Value::Float(q) | Value::Time(q) | Value::Size(q) | Value::Rate(q) => {
            q.number().unwrap()
        }
        v => panic!("{name}: {v:?}"),
    };
    // Precedence: * and ^ one level, left to right; unary minus looser.
    assert_eq!(num("n"), 36.0);
    assert_eq!(num("m"), 4.0);
    assert_eq!(num("q"), 3.0);
    assert_eq!(num("r"), 3.0);
    assert_eq!(num("half"), 0.5);
    assert_eq!(num("gap"), 15.0);
    assert_eq!(num("per"), 0.5);
    assert_eq!(num("ratio"), 60.0);
    assert_eq!(num("cmp"), 1.0, "if … then … else");
    assert_eq!(num("share"), 0.125);
    assert_eq!(num("peak"), 800.0);
    assert_eq!(g["flags"], Value::Bool(true));
    // Units.
    // Each item's quantity (bytes, seconds), whatever its unit was.
    let quantities = |name: &str| -> Vec<f64> {
        let Value::Array(items) = &g[name] else {
            panic!("{name} is not an array")
        };
        items
            .iter()
            .map(|i| match i.value {
                Value::Size(q) | Value::Time(q) => q.k,
                ref v => panic!("{name}: {v:?}"),
            })
            .collect()
    };
    let bytes = quantities("sizes");
    assert_eq!(
        bytes,
        [
            1.0,
            1.0,
            2048.0,
            1024.0,
            1048576.0,
            131072.0,
            1073741824.0,
            134217728.0,
            512.0
        ]
    );
    let secs = quantities("times");
    assert_eq!(
        secs,
        [0.005, 0.25, 2.0, 2.0, 60.0, 3600.0, 3600.0, 86400.0, 15768000.0, 1.0]
    );
    // Arrays: clones, ranges, concatenation, address ranges.
    let len = |n: &str| match &g[n] {
        Value::Array(a) => a.len(),
        v => panic!("{n}: {v:?}"),
    };
    assert_eq!((len("ones"), len("seq"), len("both")), (3, 4, 7));
    assert_eq!(num("hostCount"), 5.0);
    assert_eq!(
        (num("lo"), num("hi"), num("f"), num("i")),
        (1.0, 2.0, 3.0, 2.0)
    );
    assert_eq!((num("cA"), num("cB")), (0.7, 0.7), "group assignment");
    let Value::Array(words) = &g["words"] else {
        panic!()
    };
    assert_eq!(words[0].value, Value::Str("a\"b".into()));
    assert_eq!(int(&Value::Int(Q::plain(3.0))), 3.0);
}

#[test]
fn constructs_import_into_the_model() {
    let path = dir().join("constructs.pg");
    let imported = import(&path, &opts()).unwrap_or_else(|e| panic!("{e}"));
    let w = load_text("constructs.toml", &imported.toml, &Overrides::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", imported.toml));
    let t = &imported.toml;
    assert!(t.contains("model = \"zipf(0.6)\""), "{t}");
    assert!(t.contains("working_set_time = \"10min\""), "{t}");
    assert!(t.contains("peak_rate = \"800/s\""), "{t}");
    // A table file's bins, seconds as times.
    assert!(
        t.contains("think_time = \"table(100ms 60, 500ms 30, 2s 10)\""),
        "{t}"
    );
    assert!(
        imported.notes.iter().any(|n| n.contains("dns_resolver")),
        "{:?}",
        imported.notes
    );
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("one robot's share")),
        "{:?}",
        imported.notes
    );
    assert_eq!(
        w.phases[0].population_begin,
        cacheoff_workload::Load::Factor(0.0)
    );
    assert_eq!(w.phases.len(), 3);
    assert!(w.phases[1].measured, "the longest timed phase");
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("print: robots per host: 1000")),
        "{:?}",
        imported.notes
    );
    assert!(
        imported.mapping.iter().any(|m| m.contains("PolyMix4As")),
        "{:?}",
        imported.mapping
    );
}

#[test]
fn a_syntax_error_points_at_its_line_and_column_with_a_caret() {
    let text = "Robot R = {\n\tkind = \"x\"\n\trecurrence = 55%;\n};\n".to_string();
    let e = import_text(Path::new("bad.pg"), text, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.pg:3:"), "{e}");
    assert!(e.contains('^'), "{e}");
    // A unit must touch its number.
    let e = import_text(Path::new("u.pg"), "time t = 5 sec;".into(), &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("u.pg:1:"), "{e}");
}

#[test]
fn type_and_name_errors_point_at_their_place() {
    for (text, says, at) in [
        ("Robot R;\nR.no_such_field = 1;\n", "no field", "x.pg:2:"),
        ("int x = 1;\nint x = 2;\n", "declared twice", "x.pg:2:"),
        ("float f = y;\n", "`y` is not declared", "x.pg:1:"),
        ("Widget w;\n", "unknown type", "x.pg:1:"),
        (
            "int i = 3.5;\n",
            "no conversion from float to int",
            "x.pg:1:",
        ),
        ("#include \"nowhere.pg\"\n", "cannot find", "x.pg:1:"),
    ] {
        let e = import_text(Path::new("x.pg"), text.into(), &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && e.contains(at), "{text}: {e}");
    }
}

/// A robot with a field cacheoff does not model, in a copy of the
/// DataComm-1 description.
fn with_cookies() -> String {
    let text = std::fs::read_to_string(dir().join("datacomm-1.pg")).unwrap();
    text.replace(
        "\tpconn_use_lmt = zipf(64);\n\taddresses",
        "\tpconn_use_lmt = zipf(64);\n\tcookie_sender = 50%;\n\taddresses",
    )
}

#[test]
fn what_is_not_modelled_is_named_with_its_place_and_refused_unless_lenient() {
    let path = dir().join("datacomm-1-cookies.pg");
    let text = with_cookies();
    let line = text
        .lines()
        .position(|l| l.contains("cookie_sender"))
        .unwrap()
        + 1;
    let e = import_text(&path, text.clone(), &opts()).unwrap_err();
    let ImportError::Unmodelled(list) = &e else {
        panic!("{e}")
    };
    assert_eq!(list.len(), 1, "{list:?}");
    assert!(
        list[0].contains(&format!("datacomm-1-cookies.pg:{line}:")),
        "{list:?}"
    );
    assert!(
        list[0].contains("Robot.cookie_sender is not modelled"),
        "{list:?}"
    );
    assert!(e.to_string().contains("--lenient"), "{e}");
    let lenient = Options {
        lenient: true,
        ..opts()
    };
    let ok = import_text(&path, text, &lenient).unwrap();
    assert_eq!(ok.warnings.len(), 1);
    // A bench without a peak rate leaves it to --rate, and says so.
    let open = std::fs::read_to_string(dir().join("polymix-4.pg"))
        .unwrap()
        .replace(
            "TheBench.peak_req_rate = 500/sec;",
            "TheBench.peak_req_rate = undef();",
        );
    let p4 = import_text(&dir().join("open-peak.pg"), open, &opts()).unwrap();
    assert!(!p4.toml.contains("peak_rate"), "{}", p4.toml);
    assert!(
        p4.notes.iter().any(|n| n.contains("--rate")),
        "{:?}",
        p4.notes
    );
    // The wait phase is left out, and said so.
    assert!(
        ok.notes.iter().any(|n| n.contains("\"wait\"")),
        "{:?}",
        ok.notes
    );
}

#[test]
fn includes_come_from_the_file_s_directory_then_the_include_path() {
    let path = dir().join("constructs.pg");
    let text = std::fs::read_to_string(&path).unwrap();
    let e = import_text(&path, text, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("sizes.pg") && e.contains("--include"), "{e}");
}

#[test]
fn two_kinds_of_robot_are_refused_at_the_second() {
    let text =
        std::fs::read_to_string(dir().join("datacomm-1.pg")).unwrap() + "Robot R2 = R;\nuse(R2);\n";
    let lines = text.lines().count();
    let e = import_text(&dir().join("two.pg"), text, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("one kind of robot; the file uses 2"), "{e}");
    assert!(e.contains(&format!("two.pg:{lines}:")), "{e}");
}
