//! `cacheoff msl`: the cache-off MSL test of one product, as text or one
//! JSON object. The measurement is `cacheoff_msl`'s.

use crate::cli::MslArgs;
use crate::Failure;
use cacheoff_msl::{Ending, MslConfig, MslReport, REQUIRED_TIME_WAIT};
use std::net::{SocketAddr, ToSocketAddrs};

pub fn run(a: &MslArgs) -> Result<(), Failure> {
    let mut cfg = MslConfig::new(resolve(&a.product)?);
    cfg.interval = a.interval.0;
    cfg.timeout = a.timeout.0;
    if let Some(host) = &a.surrogate {
        cfg.request = MslConfig::surrogate_request(host);
    }
    cfg.check().map_err(Failure::usage)?;
    if !a.json {
        eprintln!(
            "MSL test of {}: probing its TIME-WAIT every {} for up to {}",
            cfg.product, a.interval, a.timeout
        );
    }
    let r = cacheoff_msl::measure(&cfg).map_err(|e| match e.is_setup() {
        true => Failure::usage(e),
        false => Failure::run(e),
    })?;
    if a.json {
        println!("{}", json(&r));
    } else {
        print!("{}", text(&r));
    }
    match r.pass() {
        true => Ok(()),
        false => Err(Failure::run(anyhow::anyhow!(
            "TIME-WAIT of {:.1} s is under the {} s the rule asks",
            r.time_wait_s(),
            REQUIRED_TIME_WAIT.as_secs()
        ))),
    }
}

/// HOST:PORT to an address, IPv4 first (the test speaks IPv4 only; an
/// IPv6 address is left for the test to refuse by name).
fn resolve(product: &str) -> Result<SocketAddr, Failure> {
    let addrs: Vec<SocketAddr> = product
        .to_socket_addrs()
        .map_err(|e| Failure::usage(anyhow::anyhow!("{product}: {e}")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| Failure::usage(anyhow::anyhow!("{product}: no address")))
}

/// The figure and verdict as one JSON object.
pub fn json(r: &MslReport) -> serde_json::Value {
    serde_json::json!({
        "time_wait_s": r.time_wait_s(),
        "pass": r.pass(),
        "msl_s": r.time_wait_s() / 2.0,
        "at_least": r.ending == Ending::TimedOut,
        "ending": r.ending.name(),
        "closed_with_reset": r.closed_with_reset,
        "probes": r.probes,
        "time_wait_acks": r.time_wait_acks,
        "product": r.product.to_string(),
        "local": r.local.to_string(),
        "required_time_wait_s": REQUIRED_TIME_WAIT.as_secs(),
    })
}

/// The figure, how probing ended, and the verdict, for people.
pub fn text(r: &MslReport) -> String {
    let tw = r.time_wait_s();
    let figure = match r.ending {
        Ending::TimedOut => format!("at least {tw:.1} s (MSL at least {:.1} s)", tw / 2.0),
        _ => format!("{tw:.1} s (MSL {:.1} s)", tw / 2.0),
    };
    let how = match r.ending {
        Ending::Accepted => "the product accepted a probe (SYN-ACK)",
        Ending::Refused => "the product reset a probe: no TIME-WAIT left, nobody listening",
        Ending::TimedOut => "still in TIME-WAIT when probing stopped",
    };
    let mut out = format!(
        "TIME-WAIT: {figure}\n  {how} after {} probes, {} answered by the TIME-WAIT's ACK\n",
        r.probes, r.time_wait_acks
    );
    if r.closed_with_reset {
        out.push_str("  the product closed the connection with a RST, which leaves no TIME-WAIT\n");
    }
    out.push_str(&format!(
        "verdict: {} (the rule: TIME-WAIT of at least {} s, MSL of at least {} s)\n",
        if r.pass() { "pass" } else { "fail" },
        REQUIRED_TIME_WAIT.as_secs(),
        REQUIRED_TIME_WAIT.as_secs() / 2
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report(secs: f64, ending: Ending, reset: bool) -> MslReport {
        MslReport {
            product: "127.0.0.1:3128".parse().unwrap(),
            local: "127.0.0.1:40000".parse().unwrap(),
            time_wait: Duration::from_secs_f64(secs),
            ending,
            closed_with_reset: reset,
            probes: 600,
            time_wait_acks: 120,
        }
    }

    #[test]
    fn the_verdict_is_60_s_of_time_wait_to_a_tenth_of_a_second() {
        let r = report(61.83, Ending::Accepted, false);
        assert_eq!(r.time_wait_s(), 61.8);
        let j = json(&r);
        assert_eq!(
            (j["time_wait_s"].as_f64(), j["pass"].as_bool()),
            (Some(61.8), Some(true))
        );
        assert_eq!(j["ending"], "accepted");
        assert!(
            text(&r).contains("TIME-WAIT: 61.8 s (MSL 30.9 s)"),
            "{}",
            text(&r)
        );
        assert!(text(&r).contains("verdict: pass"));
        // 59.96 s shows as 60.0 s, and passes as shown.
        assert!(report(59.96, Ending::Accepted, false).pass());
        assert!(!report(59.94, Ending::Accepted, false).pass());
    }

    #[test]
    fn a_reset_close_fails_and_says_why() {
        let r = report(0.002, Ending::Accepted, true);
        let j = json(&r);
        assert_eq!(
            (j["time_wait_s"].as_f64(), j["pass"].as_bool()),
            (Some(0.0), Some(false))
        );
        assert_eq!(j["closed_with_reset"], true);
        let t = text(&r);
        assert!(
            t.contains("closed the connection with a RST") && t.contains("verdict: fail"),
            "{t}"
        );
    }

    #[test]
    fn a_timeout_is_a_lower_bound() {
        let r = report(180.0, Ending::TimedOut, false);
        assert_eq!(json(&r)["at_least"], true);
        assert!(text(&r).contains("TIME-WAIT: at least 180.0 s"));
        assert!(r.pass());
        assert!(!report(30.0, Ending::TimedOut, false).pass());
    }
}
