//! `products.toml`: which run directory is which product, what it cost,
//! and the product's other tests (downtime run, MSL verdict, conformance
//! score). A lineup writes it into its directory; `cacheoff compare
//! --products` reads one written by hand too. Keys: docs/lineup.md.

use crate::files::write_atomic;
use crate::{Mode, RunDirError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The products file's name in a lineup's directory.
pub const PRODUCTS_FILE: &str = "products.toml";

/// `products.toml`: one `[[product]]` per run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Products {
    #[serde(default)]
    pub product: Vec<Product>,
}

/// One product's entry. Build one in code with
/// `Product { run, label, ..Product::default() }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    /// The product's run directory (relative to the products file).
    pub run: PathBuf,
    /// The name shown, e.g. `Squid`.
    pub label: String,
    /// The product's short name, e.g. `squid` (the lineup's product file
    /// name); `summary.json` names the product by it (else by `label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The product's version, shown after its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Forward proxy or surrogate; default: the run manifest's mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Total price (devices and network gear), in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// The product's downtime-test run (relative to the products file),
    /// for TTFM, TTFH and the time to first connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime: Option<PathBuf>,
    /// The MSL test's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msl: Option<Msl>,
    /// The HTTP caching conformance suite's score (`cacheoff conform`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conformance: Option<Conformance>,
}

/// `cacheoff conform`'s score: checks passed and failed (and the optional
/// ones the product does not do, which count neither way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conformance {
    pub passed: u32,
    pub failed: u32,
    #[serde(default)]
    pub optional: u32,
}

impl Conformance {
    /// Passed checks as a share of those passed or failed, in percent.
    pub fn percent(&self) -> f64 {
        f64::from(self.passed) * 100.0 / f64::from((self.passed + self.failed).max(1))
    }
}

/// The MSL test's result as a products file records it (the rules judge
/// it: `cacheoff_rundir::rules`).
pub use crate::rules::MslResult as Msl;

impl Products {
    /// Reads a products file; run and downtime paths are taken relative to
    /// the file's directory.
    pub fn load(path: &Path) -> Result<Products, RunDirError> {
        let bad = |why: String| RunDirError::Read {
            path: path.into(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let mut p: Products = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        p.check().map_err(bad)?;
        let base = path.parent().unwrap_or(Path::new("."));
        for prod in &mut p.product {
            prod.run = base.join(&prod.run);
            prod.downtime = prod.downtime.as_ref().map(|d| base.join(d));
        }
        Ok(p)
    }

    /// The file's text: paths are written as held, so keep them relative
    /// to where the file will be.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("products serialize as TOML")
    }

    /// Writes the file to `path` (atomically), paths as held.
    pub fn write(&self, path: &Path) -> Result<(), RunDirError> {
        write_atomic(path, self.to_toml().as_bytes()).map_err(|source| RunDirError::Write {
            path: path.into(),
            source,
        })
    }

    fn check(&self) -> Result<(), String> {
        for p in &self.product {
            let what = |key: &str| format!("product {:?}: {key}", p.label);
            if p.mode == Some(Mode::Direct) {
                return Err(format!(
                    "{}: a product runs as \"forward\" or \"reverse\"",
                    what("mode")
                ));
            }
            if let Some(t) = p.msl.and_then(|m| m.time_wait_s) {
                if !(t.is_finite() && t >= 0.0) {
                    return Err(format!(
                        "{}: {t} is not a duration",
                        what("msl.time_wait_s")
                    ));
                }
            }
            if let Some(price) = p.price {
                if !(price.is_finite() && price >= 0.0) {
                    return Err(format!("{}: {price} is not a price", what("price")));
                }
            }
        }
        Ok(())
    }

    /// The product whose run is `dir` (the same directory, however
    /// named).
    pub fn find(&self, dir: &Path) -> Option<&Product> {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        let want = canon(dir)?;
        self.product
            .iter()
            .find(|p| canon(&p.run) == Some(want.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_read_new_keys_read_and_a_built_list_saves_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("products.toml");
        std::fs::write(
            &path,
            "[[product]]\nrun = \"a\"\nlabel = \"A\"\nprice = 2500\ndowntime = \"a-down\"\n",
        )
        .unwrap();
        let p = Products::load(&path).unwrap();
        assert_eq!(p.product[0].run, dir.path().join("a"));
        assert_eq!(p.product[0].downtime, Some(dir.path().join("a-down")));
        assert_eq!((p.product[0].mode, p.product[0].msl), (None, None));

        let built = Products {
            product: vec![
                Product {
                    run: "squid-forward".into(),
                    label: "Squid".into(),
                    name: Some("squid".into()),
                    version: Some("5.7".into()),
                    mode: Some(Mode::Forward),
                    downtime: Some("squid-forward-downtime".into()),
                    msl: Some(Msl {
                        time_wait_s: Some(60.1),
                        pass: Some(true),
                    }),
                    ..Product::default()
                },
                Product {
                    run: "varnish-reverse".into(),
                    label: "Varnish".into(),
                    mode: Some(Mode::Reverse),
                    msl: Some(Msl {
                        time_wait_s: Some(0.1),
                        pass: None,
                    }),
                    ..Product::default()
                },
            ],
        };
        built.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, built.to_toml());
        assert!(text.contains("mode = \"reverse\""), "{text}");
        let mut back = Products::load(&path).unwrap();
        for p in &mut back.product {
            p.run = p.run.strip_prefix(dir.path()).unwrap().into();
            p.downtime = p
                .downtime
                .as_ref()
                .map(|d| d.strip_prefix(dir.path()).unwrap().into());
        }
        assert_eq!(back, built);
        let verdicts: Vec<_> = built
            .product
            .iter()
            .map(|p| p.msl.unwrap().verdict())
            .collect();
        assert_eq!(verdicts, [Some(true), Some(false)]);
        assert_eq!(Msl::default().verdict(), None);
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("products.toml");
        for (text, key) in [
            ("mode = \"direct\"", "mode"),
            ("mode = \"sideways\"", "mode"),
            ("msl = { time_wait_s = -1.0 }", "msl.time_wait_s"),
            ("msl = { seconds = 60 }", "seconds"),
            ("price = -5", "price"),
        ] {
            std::fs::write(
                &path,
                format!("[[product]]\nrun = \"a\"\nlabel = \"A\"\n{text}\n"),
            )
            .unwrap();
            let e = Products::load(&path).unwrap_err().to_string();
            assert!(
                e.contains("products.toml") && e.contains(key),
                "{text}: {e}"
            );
        }
    }
}
