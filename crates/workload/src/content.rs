//! Content types: what share of objects they are, how big, how cachable,
//! how they change, and which objects they embed.

use crate::dist::{deserialize_dist, Dist, Quantity};
use crate::lifecycle::LifeCycle;
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// Named content sets that workload files can use with
/// `content = "name"` (the files in `workloads/content/`).
const CONTENT_SETS: &[(&str, &str)] = &[(
    "polymix",
    include_str!("../../../workloads/content/polymix.toml"),
)];

/// The content types of a named set.
pub fn content_set(name: &str) -> Option<Vec<ContentType>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Set {
        content: Vec<ContentType>,
    }
    let (_, text) = CONTENT_SETS.iter().find(|(n, _)| *n == name)?;
    let set: Set = toml::from_str(text).expect("built-in content sets parse");
    Some(set.content)
}

/// Deserializes `content` as a list of types or the name of a set.
pub(crate) fn deserialize_content<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<ContentType>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<ContentType>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("[[content]] tables or the name of a content set (\"polymix\")")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            content_set(v).ok_or_else(|| {
                let names: Vec<&str> = CONTENT_SETS.iter().map(|(n, _)| *n).collect();
                E::custom(format!(
                    "unknown content set {v:?} (known: {})",
                    names.join(", ")
                ))
            })
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
        }
    }
    d.deserialize_any(V)
}

/// One kind of object (image, HTML page, download, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentType {
    pub name: String,
    /// Share of the servers' content mix (of all objects served).
    pub share: f64,
    #[serde(deserialize_with = "size_dist")]
    pub size: Dist,
    /// Probability that an object of this type is cachable.
    pub cachable: f64,
    /// Probability that a response carries `Content-MD5`.
    #[serde(default)]
    pub md5: f64,
    /// URL extensions and their shares (none: no extension).
    #[serde(default)]
    pub extensions: Vec<Extension>,
    /// `Content-Type` of the responses.
    #[serde(default = "octet_stream")]
    pub mime: String,
    #[serde(default)]
    pub life_cycle: LifeCycle,
    /// Requested only as embedded objects of other pages, never directly.
    #[serde(default)]
    pub embedded_only: bool,
    /// Objects this type's pages embed, fetched right after the page.
    #[serde(default)]
    pub embeds: Option<Embeds>,
}

/// A URL extension and its share among a type's objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    pub ext: String,
    pub share: f64,
}

/// What a page embeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Embeds {
    /// Name of the embedded objects' content type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Number of embedded objects per page.
    #[serde(deserialize_with = "count_dist")]
    pub count: Dist,
}

fn octet_stream() -> String {
    "application/octet-stream".into()
}
fn size_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Size)
}
fn count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Count)
}

impl ContentType {
    /// One type of `size` objects, `cachable` of them cachable.
    pub fn single(name: &str, size: Dist, cachable: f64, life_cycle: LifeCycle) -> ContentType {
        ContentType {
            name: name.into(),
            share: 1.0,
            size,
            cachable,
            md5: 0.0,
            extensions: Vec::new(),
            mime: octet_stream(),
            life_cycle,
            embedded_only: false,
            embeds: None,
        }
    }
}

/// Derived facts about a content mix.
#[derive(Debug, Clone)]
pub struct Mix {
    /// Cumulative shares of the directly requested types, normalised to 1,
    /// with their indexes.
    direct: Vec<(f64, u16)>,
    /// For each type, the index of the type it embeds.
    embed_of: Vec<Option<u16>>,
}

impl Mix {
    /// Checks names and shares; `Err` names the problem.
    pub fn new(types: &[ContentType]) -> Result<Mix, String> {
        if types.is_empty() {
            return Err("need at least one content type".into());
        }
        let direct_total: f64 = types
            .iter()
            .filter(|t| !t.embedded_only)
            .map(|t| t.share)
            .sum();
        if direct_total <= 0.0 {
            return Err("the directly requested types need shares above zero".into());
        }
        let mut acc = 0.0;
        let direct = types
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.embedded_only)
            .map(|(i, t)| {
                acc += t.share / direct_total;
                (acc, i as u16)
            })
            .collect();
        let embed_of = types
            .iter()
            .map(|t| {
                t.embeds
                    .as_ref()
                    .map(|e| {
                        types
                            .iter()
                            .position(|o| o.name == e.type_name)
                            .map(|i| i as u16)
                            .ok_or_else(|| {
                                format!("{} embeds unknown type {:?}", t.name, e.type_name)
                            })
                    })
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        for t in types {
            let ext_total: f64 = t.extensions.iter().map(|e| e.share).sum();
            if !t.extensions.is_empty() && (ext_total - 1.0).abs() > 1e-6 {
                return Err(format!(
                    "{}: extension shares add up to {ext_total}, not 1",
                    t.name
                ));
            }
        }
        Ok(Mix { direct, embed_of })
    }

    /// The directly requested types: (cumulative share, type index).
    pub fn direct(&self) -> &[(f64, u16)] {
        &self.direct
    }

    /// The directly requested type for a uniform `u` in [0, 1).
    pub fn direct_type(&self, u: f64) -> u16 {
        self.direct
            .iter()
            .find(|(c, _)| u < *c)
            .or(self.direct.last())
            .map_or(0, |(_, i)| *i)
    }

    pub fn embed_of(&self, t: u16) -> Option<u16> {
        self.embed_of[t as usize]
    }

    /// Expected embedded requests per direct request.
    pub fn embedded_per_direct(&self, types: &[ContentType]) -> f64 {
        let mut prev = 0.0;
        self.direct
            .iter()
            .map(|(c, i)| {
                let p = c - prev;
                prev = *c;
                p * types[*i as usize]
                    .embeds
                    .as_ref()
                    .map_or(0.0, |e| e.count.mean())
            })
            .sum()
    }
}
