//! The run parameters a PGL file leaves to its user, by the names
//! Polygraph's standard files give them: `Bench.peak_req_rate`, a `size`
//! called `ProxyCacheSize` (or `CacheSize`, `Cache_size`) and a `rate`
//! called `FillRate` (or `Fill_rate`). They stay symbols while the file
//! runs, so what depends on them keeps its rule (`2 * ProxyCacheSize` is
//! "twice the cache"); a value the file gives them is the default that
//! the command line overrides.

use crate::value::{Param, Value, Q};

/// The parameter a top-level variable of this name and type stands for.
pub fn by_name(name: &str, ty: &str) -> Option<Param> {
    let plain: String = name
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    match (ty, plain.as_str()) {
        ("size", "proxycachesize" | "cachesize") => Some(Param::CacheSize),
        ("rate", "fillrate") => Some(Param::FillRate),
        _ => None,
    }
}

/// The value a parameter reads as: itself, once.
pub fn symbol(p: Param) -> Value {
    match p {
        Param::Peak | Param::FillRate => Value::Rate(Q::of(p)),
        Param::CacheSize => Value::Size(Q::of(p)),
        Param::FillShare | Param::InvPeak => Value::Float(Q::of(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_names_and_their_spellings() {
        assert_eq!(by_name("ProxyCacheSize", "size"), Some(Param::CacheSize));
        assert_eq!(by_name("Cache_size", "size"), Some(Param::CacheSize));
        assert_eq!(by_name("FillRate", "rate"), Some(Param::FillRate));
        // The type must fit too.
        assert_eq!(by_name("FillRate", "float"), None);
        assert_eq!(by_name("WSS", "size"), None);
    }
}
