//! Settings from the command line that override a workload's own.
//!
//! One table (the `overrides!` call below) gives each such parameter its
//! field of [`Overrides`], its `cacheoff run` flag, value name and help
//! line, the file key it overrides with that key's default, how its text
//! parses and what it changes. From it come the `Overrides` struct,
//! [`Overrides::PARAMS`] (the binary builds the flags from it and a test
//! holds docs/workload-files.md to it), [`Overrides::set`] and
//! `Overrides::apply`, the one place where overrides take effect.

use crate::dist::{Dist, Quantity};
use crate::model::HttpVersion;
use crate::raw::{PeakRate, RawWorkload};
use cacheoff_base::{Bytes, Dur, Rate};
use std::net::Ipv4Addr;
use std::str::FromStr;

/// One parameter the command line can set: a row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// The `cacheoff run` flag, without `--`.
    pub flag: &'static str,
    /// Another name the flag answers to.
    pub alias: Option<&'static str>,
    /// What the value is (`RATE`, `TIME`, `DIST`...), as the help shows it.
    pub value_name: &'static str,
    /// The workload file key it overrides.
    pub key: &'static str,
    /// That key's default as docs/workload-files.md writes it; `None` where
    /// the key has none of its own (a phase's duration).
    pub default: Option<&'static str>,
    /// The help line.
    pub help: &'static str,
    /// The value the flag takes when given without one (`--tls` is
    /// `--tls on`).
    pub bare: Option<&'static str>,
}

/// `Some(x)` for an optional column that is there, `None` otherwise.
macro_rules! column {
    () => {
        None
    };
    ($x:literal) => {
        Some($x)
    };
}

/// How a value parses: the row's own parser, or its type's `FromStr`.
macro_rules! parse_value {
    ($text:expr, $ty:ty) => {
        <$ty as FromStr>::from_str($text)
    };
    ($text:expr, $ty:ty, $parse:expr) => {
        ($parse)($text)
    };
}

/// Defines [`Overrides`] and its table from rows of
/// `field: Type { flag, [alias,] value, key, [default,] help, [parse,] apply }`;
/// `apply: |w, v| ...` changes the raw workload `w` with the value `v`.
macro_rules! overrides {
    ($(
        $field:ident: $ty:ty {
            flag: $flag:literal,
            $(alias: $alias:literal,)?
            value: $value:literal,
            key: $key:literal,
            $(default: $default:literal,)?
            $(bare: $bare:literal,)?
            help: $help:literal,
            $(parse: $parse:expr,)?
            apply: |$w:ident, $v:ident| $apply:expr,
        }
    )*) => {
        /// Settings from the command line that override a workload's own,
        /// one per row of [`Overrides::PARAMS`]; `None` keeps the
        /// workload's.
        #[derive(Debug, Clone, Default)]
        pub struct Overrides {
            $(#[doc = $help] pub $field: Option<$ty>,)*
        }

        impl Overrides {
            /// Every parameter the command line can set, in the order they
            /// apply.
            pub const PARAMS: &'static [Param] = &[$(Param {
                flag: $flag,
                alias: column!($($alias)?),
                value_name: $value,
                key: $key,
                default: column!($($default)?),
                help: $help,
                bare: column!($($bare)?),
            },)*];

            /// Sets the parameter of `--flag` (or its alias) from its
            /// text; `Err` says what is wrong with the text.
            pub fn set(&mut self, flag: &str, text: &str) -> Result<(), String> {
                let flag = Self::PARAMS
                    .iter()
                    .find(|p| p.alias == Some(flag))
                    .map_or(flag, |p| p.flag);
                match flag {
                    $($flag => {
                        self.$field =
                            Some(parse_value!(text, $ty $(, $parse)?).map_err(|e| e.to_string())?)
                    })*
                    _ => return Err(format!("--{flag} is not a workload setting")),
                }
                Ok(())
            }

            /// The flag that set the file key `key`, if one did.
            pub fn flag_of(&self, key: &str) -> Option<&'static str> {
                $(if $key == key && self.$field.is_some() {
                    return Some($flag);
                })*
                None
            }

            /// Applies every override that is set, in table order, to a
            /// workload as its file has it (before scaling rules).
            pub(crate) fn apply(&self, raw: &mut RawWorkload) {
                $(if let Some($v) = self.$field.clone() {
                    let $w = &mut *raw;
                    $apply;
                })*
            }
        }
    };
}

// Rows apply in this order: --plateau scales every phase before
// --duration and --warmup set theirs.
overrides! {
    rate: PeakRate {
        flag: "rate",
        alias: "peak-rate",
        value: "RATE",
        key: "peak_rate",
        default: "`\"400/s\"`",
        help: "Total request rate at peak load, e.g. 400/s; `max` runs closed-loop (each robot sends its next request as soon as a connection is free)",
        apply: |w, v| w.peak_rate = v,
    }
    robots: u32 {
        flag: "robots",
        value: "N",
        key: "robots.count",
        default: "from the rate",
        help: "Number of robots (simulated browsers), each with its own address",
        apply: |w, v| w.robots.count = Some(v),
    }
    servers: u32 {
        flag: "servers",
        value: "N",
        key: "servers.count",
        default: "from the robots",
        help: "Number of origin servers, each with its own address",
        apply: |w, v| w.servers.count = Some(v),
    }
    plateau: Dur {
        flag: "plateau",
        value: "TIME",
        key: "plateau",
        default: "the last measured phase",
        help: "Compress time: every phase keeps its share of the run, scaled so the plateau (e.g. PolyMix's 4 h peak) lasts this long",
        apply: |w, v| w.scale_plateau(v),
    }
    duration: Dur {
        flag: "duration",
        value: "TIME",
        key: "phases.duration",
        help: "Length of the measured phase, e.g. 2min",
        apply: |w, v| if let Some(p) = w.phases.iter_mut().rev().find(|p| p.measured) {
            p.duration = v;
        },
    }
    warmup: Dur {
        flag: "warmup",
        value: "TIME",
        key: "phases.duration",
        help: "Length of the warm-up phase before it, e.g. 10s",
        apply: |w, v| if let Some(p) = w.phases.first_mut().filter(|p| !p.measured) {
            p.duration = v;
        },
    }
    cache_size: Bytes {
        flag: "cache-size",
        value: "SIZE",
        key: "cache_size",
        default: "none",
        help: "Capacity of the cache under test (disk + RAM), e.g. 2GB; fill phases fetch a multiple of it",
        apply: |w, v| w.cache_size = Some(v),
    }
    fill_rate: Rate {
        flag: "fill-rate",
        value: "RATE",
        key: "fill_rate",
        default: "the peak rate",
        help: "Request rate of the fill phases (at most the peak rate)",
        apply: |w, v| w.fill_rate = Some(v),
    }
    seed: u64 {
        flag: "seed",
        value: "N",
        key: "seed",
        default: "`1`",
        help: "Seed of every random choice; the same seed gives the same plan",
        apply: |w, v| w.seed = v,
    }
    size: Dist {
        flag: "size",
        value: "DIST",
        key: "content.size",
        default: "required",
        help: "Object size distribution, e.g. exp(13KB) or 1KB",
        parse: |s| Dist::parse(Quantity::Size, s),
        apply: |w, v| for t in &mut w.content {
            t.size = v.clone();
        },
    }
    think_time: Dist {
        flag: "think-time",
        value: "DIST",
        key: "servers.think_time",
        default: "`\"const(0s)\"`",
        help: "Server think time before answering, e.g. norm(2.5s,1s) or 50ms",
        parse: |s| Dist::parse(Quantity::Time, s),
        apply: |w, v| w.servers.think_time = v,
    }
    robot_ips: Ipv4Addr {
        flag: "robot-ips",
        value: "IP",
        key: "robots.first_ip",
        default: "`\"127.1.0.1\"`",
        help: "First robot address (inside 127.0.0.0/8); robots use consecutive addresses",
        apply: |w, v| w.robots.first_ip = v,
    }
    server_ips: Ipv4Addr {
        flag: "server-ips",
        value: "IP",
        key: "servers.first_ip",
        default: "`\"127.2.0.1\"`",
        help: "First origin server address (inside 127.0.0.0/8)",
        apply: |w, v| w.servers.first_ip = v,
    }
    server_port: u16 {
        flag: "server-port",
        value: "PORT",
        key: "servers.port",
        default: "`0`",
        help: "Port of every origin server (0 picks a free port for each)",
        parse: |s: &str| match s.parse::<u64>() {
            Ok(n) => u16::try_from(n).map_err(|_| format!("{n} is not in 0..=65535")),
            Err(e) => Err(e.to_string()),
        },
        apply: |w, v| w.servers.port = v,
    }
    max_conns: u32 {
        flag: "max-conns",
        value: "N",
        key: "robots.max_conns",
        default: "`4`",
        help: "Most connections a robot keeps open at once (HTTP/2: most requests it has in flight)",
        apply: |w, v| w.robots.max_conns = v,
    }
    http: HttpVersion {
        flag: "http",
        value: "VERSION",
        key: "robots.http",
        default: "`\"1.1\"`",
        help: "HTTP version robots speak, 1.1 or 2; 2 multiplexes a robot's requests over one connection per server (ALPN h2 over TLS, prior knowledge in the clear)",
        apply: |w, v| {
            w.robots.http = v;
            // HTTP/2 replaces a workload's HTTP/1.0 dialect.
            w.robots.http10 &= v == HttpVersion::Http1;
        },
    }
    tls: bool {
        flag: "tls",
        value: "on/off",
        key: "robots.tls",
        default: "`false`",
        bare: "on",
        help: "Robots speak HTTPS: TLS to the origin servers (--direct), a CONNECT tunnel per origin server through a forward proxy, TLS to a surrogate (--reverse https://HOST:PORT sets it)",
        parse: switch,
        apply: |w, v| w.robots.tls = v,
    }
    tls_resume: bool {
        flag: "tls-resume",
        value: "on/off",
        key: "robots.tls_resume",
        default: "`true`",
        bare: "on",
        help: "Resume TLS sessions on new connections, as browsers do; off makes every handshake a full one",
        parse: switch,
        apply: |w, v| w.robots.tls_resume = v,
    }
}

/// `on`/`off` (or `true`/`false`, `yes`/`no`).
fn switch(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        other => Err(format!("{other:?}: say on or off")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, Workload};

    /// A value for each flag that differs from every built-in's own.
    fn example(flag: &str) -> &'static str {
        match flag {
            "rate" => "max",
            "robots" => "7",
            "servers" => "3",
            "plateau" => "6s",
            "duration" => "30s",
            "warmup" => "2s",
            "cache-size" => "64MB",
            "fill-rate" => "50/s",
            "seed" => "9",
            "size" => "exp(2KB)",
            "think-time" => "10ms",
            "robot-ips" => "127.5.0.1",
            "server-ips" => "127.6.0.1",
            "server-port" => "8080",
            "max-conns" => "2",
            "http" => "2",
            "tls" => "on",
            "tls-resume" => "off",
            other => panic!("no example for --{other}: add one"),
        }
    }

    #[test]
    fn every_setting_parses_and_takes_effect() {
        let plain = load("simple", &Overrides::default()).unwrap();
        for p in Overrides::PARAMS {
            let mut o = Overrides::default();
            o.set(p.flag, example(p.flag)).unwrap();
            let w = load("simple", &o).unwrap();
            assert_ne!(w, plain, "--{} changed nothing", p.flag);
            assert!(Overrides::default().set(p.flag, "?").is_err(), "{}", p.flag);
        }
        let e = Overrides::default()
            .set("server-port", "70000")
            .unwrap_err();
        assert_eq!(e, "70000 is not in 0..=65535");
        let e = Overrides::default().set("colour", "red").unwrap_err();
        assert!(e.contains("--colour"), "{e}");
    }

    #[test]
    fn flags_are_their_fields_in_kebab_case_and_unique() {
        let o = format!("{:?}", Overrides::default());
        for (i, p) in Overrides::PARAMS.iter().enumerate() {
            assert!(o.contains(&format!("{}: None", p.flag.replace('-', "_"))));
            assert!(Overrides::PARAMS[..i].iter().all(|q| q.flag != p.flag));
        }
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let o = Overrides {
            rate: Some(Rate(100.0).into()),
            duration: Some(Dur::secs(30.0)),
            seed: Some(9),
            ..Default::default()
        };
        let w = load("simple", &o).unwrap();
        assert_eq!(w.robots.count, 250);
        assert_eq!(w.servers.count, 525);
        assert_eq!(w.phases[1].duration, Dur::secs(30.0));
        assert_eq!(w.seed, 9);
        assert_eq!(w.robot_rate(), Some(0.4));

        let bad = Overrides {
            robots: Some(2000),
            robot_ips: Some(Ipv4Addr::new(127, 255, 255, 1)),
            ..Default::default()
        };
        let e = load("simple", &bad).unwrap_err().to_string();
        assert!(e.contains("127.0.0.0/8"), "{e}");
        // Flags meet the ranges a file's values do, and are named.
        for (flag, text, want) in [
            (
                "robots",
                "100000000",
                "robots.count = 100000000 (--robots): must be 1 ≤ x ≤ 100000",
            ),
            (
                "rate",
                "1e300/s",
                "peak_rate = 1e300/s (--rate): must be 0/s < x ≤ 1000000/s",
            ),
            (
                "servers",
                "9000",
                "servers.count = 9000 (--servers): must be 1 ≤ x ≤ 8192",
            ),
            (
                "max-conns",
                "0",
                "robots.max_conns = 0 (--max-conns): must be 1 ≤ x ≤ 1000",
            ),
            (
                "duration",
                "1000day",
                "phases.duration = 1000day (phase \"meas\") (--duration): must be 0s < x ≤ 365day",
            ),
            (
                "size",
                "exp(2TB)",
                "content.size = exp(2TB) (object) (--size): must be 0B ≤ x ≤ 1TB",
            ),
        ] {
            let mut o = Overrides::default();
            o.set(flag, text).unwrap();
            let e = load("simple", &o).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("workloads/simple.toml: {want}")),
                "--{flag}: {e}"
            );
        }
    }

    #[test]
    fn plateau_compresses_every_phase_before_duration_and_warmup_set_theirs() {
        let at = |o: Overrides| -> Vec<Dur> {
            let w: Workload = load("simple", &o).unwrap();
            w.phases.iter().map(|p| p.duration).collect()
        };
        // simple: warm 10s, meas 1min (the nominal plateau).
        let plateau = Some(Dur::secs(6.0));
        let o = Overrides {
            plateau,
            ..Default::default()
        };
        assert_eq!(at(o), [Dur::secs(1.0), Dur::secs(6.0)]);
        let w = load(
            "simple",
            &Overrides {
                plateau,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(w.plateau, plateau);
        let o = Overrides {
            plateau,
            duration: Some(Dur::secs(30.0)),
            warmup: Some(Dur::secs(4.0)),
            ..Default::default()
        };
        assert_eq!(at(o), [Dur::secs(4.0), Dur::secs(30.0)]);
    }

    #[test]
    fn peak_rates_parse_as_rates_or_max() {
        assert_eq!("max".parse::<PeakRate>().unwrap(), PeakRate::ClosedLoop);
        assert_eq!(" MAX ".parse::<PeakRate>().unwrap(), PeakRate::ClosedLoop);
        assert_eq!(
            "400/s".parse::<PeakRate>().unwrap(),
            PeakRate::PerSecond(Rate(400.0))
        );
        assert_eq!(PeakRate::ClosedLoop.rate(), None);
        let e = "4/fortnight".parse::<PeakRate>().unwrap_err().to_string();
        assert!(e.contains("4/fortnight"), "{e}");
    }
}
