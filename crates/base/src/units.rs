//! Quantities with human units.
//!
//! Sizes use binary multiples as Web Polygraph does (`1KB` = 1024 bytes).
//! Each type parses from text (`"13KB"`, `"400/s"`, `"2min"`), prints back in
//! the same notation, and (de)serializes as that text, also accepting plain
//! numbers (bytes, per second, seconds).

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Why a unit string was rejected; the message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {input:?}: {why} (examples: {examples})")]
pub struct UnitError {
    what: &'static str,
    input: String,
    why: String,
    examples: &'static str,
}

/// Splits "13.5KB" into (13.5, "KB").
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(s.len());
    // 'e' belongs to the number only when followed by digits (1e3), not in units.
    let (mut num, mut rest) = s.split_at(end);
    if let Some(pos) = num.find('e') {
        if !num[pos + 1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-')
        {
            num = &s[..pos];
            rest = &s[pos..];
        }
    }
    let value: f64 = num.parse().ok()?;
    Some((value, rest.trim()))
}

/// Written as displayed when that reads back as the same value (manifests
/// stay readable), else in the type's exact form.
macro_rules! unit_serde {
    ($t:ty, $visit_num:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let shown = self.to_string();
                if shown.parse::<$t>().is_ok_and(|v| v == *self) {
                    s.serialize_str(&shown)
                } else {
                    s.serialize_str(&self.exact())
                }
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Raw {
                    Text(String),
                    Number(f64),
                }
                match Raw::deserialize(d)? {
                    Raw::Text(t) => t.parse().map_err(de::Error::custom),
                    Raw::Number(n) => {
                        let f: fn(f64) -> Result<$t, UnitError> = $visit_num;
                        f(n).map_err(de::Error::custom)
                    }
                }
            }
        }
    };
}

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KB: u64 = 1 << 10;
    pub const MB: u64 = 1 << 20;
    pub const GB: u64 = 1 << 30;
    pub const TB: u64 = 1 << 40;
    const EXAMPLES: &'static str = "512, 13KB, 1.5MB, 2GB";

    pub fn from_gb(n: u64) -> Bytes {
        Bytes(n * Self::GB)
    }

    fn from_f64(v: f64, input: &str) -> Result<Bytes, UnitError> {
        if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
            return Err(UnitError {
                what: "size",
                input: input.into(),
                why: "must be a non-negative number".into(),
                examples: Self::EXAMPLES,
            });
        }
        Ok(Bytes(v.round() as u64))
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = |why: &str| UnitError {
            what: "size",
            input: s.into(),
            why: why.into(),
            examples: Self::EXAMPLES,
        };
        let (v, unit) = split_number(s).ok_or_else(|| err("expected a number"))?;
        let mult = match unit.to_ascii_uppercase().as_str() {
            "" | "B" | "BYTE" | "BYTES" => 1,
            "K" | "KB" | "KIB" => Self::KB,
            "M" | "MB" | "MIB" => Self::MB,
            "G" | "GB" | "GIB" => Self::GB,
            "T" | "TB" | "TIB" => Self::TB,
            _ => return Err(err("unknown unit (use B, KB, MB, GB, TB)")),
        };
        Bytes::from_f64(v * mult as f64, s)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (mult, unit) in [
            (Self::TB, "TB"),
            (Self::GB, "GB"),
            (Self::MB, "MB"),
            (Self::KB, "KB"),
        ] {
            if n >= mult {
                return if n.is_multiple_of(mult) {
                    write!(f, "{}{unit}", n / mult)
                } else {
                    let v = n as f64 / mult as f64;
                    // Keep enough digits that text round-trips within a byte for
                    // typical values; trim trailing zeros.
                    let s = format!("{v:.3}");
                    let s = s.trim_end_matches('0').trim_end_matches('.');
                    write!(f, "{s}{unit}")
                };
            }
        }
        write!(f, "{n}B")
    }
}

impl Bytes {
    fn exact(&self) -> String {
        format!("{}B", self.0)
    }
}

unit_serde!(Bytes, |n| Bytes::from_f64(n, &n.to_string()));

/// A rate in events per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Rate(pub f64);

impl Rate {
    const EXAMPLES: &'static str = "400/s, 0.4/s, 24000/min, 10/h";

    pub fn per_sec(self) -> f64 {
        self.0
    }

    fn checked(v: f64, input: &str) -> Result<Rate, UnitError> {
        if !v.is_finite() || v < 0.0 {
            return Err(UnitError {
                what: "rate",
                input: input.into(),
                why: "must be a non-negative number".into(),
                examples: Self::EXAMPLES,
            });
        }
        Ok(Rate(v))
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = |why: &str| UnitError {
            what: "rate",
            input: s.into(),
            why: why.into(),
            examples: Self::EXAMPLES,
        };
        let (v, unit) = split_number(s).ok_or_else(|| err("expected a number"))?;
        let per = unit.trim_start_matches('/').trim();
        let secs = if per.is_empty() {
            1.0
        } else {
            parse_time_unit(per).ok_or_else(|| err("unknown time unit after '/'"))?
        };
        Rate::checked(v / secs, s)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", trim_float(self.0))
    }
}

impl Rate {
    /// The shortest decimal that reads back as the same `f64`.
    fn exact(&self) -> String {
        format!("{}/s", self.0)
    }
}

unit_serde!(Rate, |n| Rate::checked(n, &n.to_string()));

/// A duration; wraps [`std::time::Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    const EXAMPLES: &'static str = "250ms, 30s, 2min, 4h, 7day, 2year";
    pub const ZERO: Dur = Dur(Duration::ZERO);

    pub fn secs(s: f64) -> Dur {
        Dur(Duration::from_secs_f64(s))
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }

    fn from_secs_checked(v: f64, input: &str) -> Result<Dur, UnitError> {
        if !v.is_finite() || !(0.0..=1e12).contains(&v) {
            return Err(UnitError {
                what: "duration",
                input: input.into(),
                why: "must be a non-negative number".into(),
                examples: Self::EXAMPLES,
            });
        }
        Ok(Dur::secs(v))
    }
}

/// Seconds in one time unit, or None if the unit is unknown.
fn parse_time_unit(u: &str) -> Option<f64> {
    Some(match u.to_ascii_lowercase().as_str() {
        "ns" | "nsec" => 1e-9,
        "us" | "usec" | "µs" => 1e-6,
        "ms" | "msec" => 1e-3,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        "year" | "years" | "y" => 365.0 * 86_400.0,
        _ => return None,
    })
}

impl FromStr for Dur {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = |why: &str| UnitError {
            what: "duration",
            input: s.into(),
            why: why.into(),
            examples: Self::EXAMPLES,
        };
        let (v, unit) = split_number(s).ok_or_else(|| err("expected a number"))?;
        if unit == "ns" && v.fract() == 0.0 && (0.0..=9e15).contains(&v) {
            // Whole nanoseconds, exact (the form manifests use when needed).
            return Ok(Dur(Duration::from_nanos(v as u64)));
        }
        let secs = if unit.is_empty() {
            1.0
        } else {
            parse_time_unit(unit).ok_or_else(|| err("unknown time unit"))?
        };
        Dur::from_secs_checked(v * secs, s)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.as_secs_f64();
        let (v, unit) = if s == 0.0 {
            (0.0, "s")
        } else if s < 1e-3 {
            (s * 1e6, "us")
        } else if s < 1.0 {
            (s * 1e3, "ms")
        } else if s % 60.0 != 0.0 {
            (s, "s")
        } else if s % 3600.0 != 0.0 {
            (s / 60.0, "min")
        } else if s % 86_400.0 != 0.0 {
            (s / 3600.0, "h")
        } else {
            (s / 86_400.0, "day")
        };
        write!(f, "{}{unit}", trim_float(v))
    }
}

impl Dur {
    fn exact(&self) -> String {
        format!("{}ns", self.0.as_nanos())
    }
}

unit_serde!(Dur, |n| Dur::from_secs_checked(n, &n.to_string()));

/// Prints a float without trailing zeros (at most 6 decimals).
fn trim_float(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialised_values_read_back_exactly() {
        let rate: Rate = "400/min".parse().unwrap();
        let dur = Dur(Duration::from_nanos(1_234_567_891));
        let size = Bytes(1_234_567_891);
        let json = serde_json::to_string(&(rate, dur, size)).unwrap();
        let back: (Rate, Dur, Bytes) = serde_json::from_str(&json).unwrap();
        assert_eq!(back, (rate, dur, size), "{json}");
        // Values that display exactly keep their readable form.
        let json = serde_json::to_string(&(Rate(400.0), Dur::secs(90.0), Bytes(64 << 10))).unwrap();
        assert_eq!(json, r#"["400/s","90s","64KB"]"#);
    }

    #[test]
    fn bytes_parse_binary_multiples() {
        assert_eq!("13KB".parse::<Bytes>().unwrap(), Bytes(13 * 1024));
        assert_eq!("1.5MB".parse::<Bytes>().unwrap(), Bytes(1536 * 1024));
        assert_eq!("512".parse::<Bytes>().unwrap(), Bytes(512));
        assert_eq!(" 2 GB ".parse::<Bytes>().unwrap(), Bytes(2 << 30));
        assert!("13QB".parse::<Bytes>().is_err());
        assert!("-1KB".parse::<Bytes>().is_err());
        let e = "abc".parse::<Bytes>().unwrap_err().to_string();
        assert!(e.contains("\"abc\""), "{e}");
    }

    #[test]
    fn bytes_display_round_trips() {
        for s in ["13KB", "1.5MB", "512B", "2GB"] {
            let b: Bytes = s.parse().unwrap();
            assert_eq!(b.to_string(), s);
        }
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!("400/s".parse::<Rate>().unwrap(), Rate(400.0));
        assert_eq!("24000/min".parse::<Rate>().unwrap(), Rate(400.0));
        assert_eq!("0.4".parse::<Rate>().unwrap(), Rate(0.4));
        assert!("4/fortnight".parse::<Rate>().is_err());
        assert_eq!("2min".parse::<Dur>().unwrap(), Dur::secs(120.0));
        assert_eq!("250ms".parse::<Dur>().unwrap(), Dur::secs(0.25));
        assert_eq!("4h".parse::<Dur>().unwrap(), Dur::secs(14400.0));
        assert_eq!("1e3s".parse::<Dur>().unwrap(), Dur::secs(1000.0));
        assert_eq!(Dur::secs(120.0).to_string(), "2min");
        assert_eq!(Dur::secs(90.0).to_string(), "90s");
        assert_eq!(Dur::secs(60.0).to_string(), "1min");
        assert_eq!(Dur::secs(5400.0).to_string(), "90min");
        assert_eq!(Dur::secs(14400.0).to_string(), "4h");
        assert_eq!(Dur::secs(86400.0).to_string(), "1day");
        assert_eq!(Dur::secs(0.25).to_string(), "250ms");
        assert_eq!(Rate(400.0).to_string(), "400/s");
    }

    #[test]
    fn serde_accepts_text_and_numbers() {
        #[derive(serde::Deserialize, serde::Serialize)]
        struct T {
            b: Bytes,
            r: Rate,
            d: Dur,
        }
        let t: T = serde_json::from_str(r#"{"b":"13KB","r":400,"d":"2min"}"#).unwrap();
        assert_eq!(t.b, Bytes(13312));
        assert_eq!(t.r, Rate(400.0));
        assert_eq!(t.d, Dur::secs(120.0));
        let back = serde_json::to_string(&t).unwrap();
        assert_eq!(back, r#"{"b":"13KB","r":"400/s","d":"2min"}"#);
    }
}
