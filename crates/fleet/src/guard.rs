//! What an agent will do for a coordinator, even one holding the fleet's
//! credentials: a share it can hold (robots, workers, servers, rate
//! within its [`Limits`]), a run id that is a name and never a path, and
//! traffic only toward the destinations it allows ([`Targets`]). Each
//! check is a pure function of the message and the agent's settings, and
//! a refusal says what was asked, what is allowed and which flag moves it.

use crate::wire::{Prepare, ViaSpec};
use cacheoff_access::{admitted, Dest, DestRule, Host};
use std::net::SocketAddr;
use std::time::Duration;

/// What one agent holds at most, and how long a stranger may take.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Robots of its share (`--max-robots`).
    pub max_robots: u64,
    /// Origin servers it binds (`--max-servers`).
    pub max_servers: u32,
    /// Requests per second of its share at the workload's peak
    /// (`--max-rate`).
    pub max_rate: f64,
    /// Links open at once, authenticated or not (`--max-connections`).
    pub max_connections: usize,
    /// Links from one address still proving who they are.
    pub max_pending_per_peer: usize,
    /// From accepting a link to its peer's hello, TLS included.
    pub handshake: Duration,
    /// The longest a coordinator may keep this agent waiting between the
    /// hello and the start (it says how long it waits for other agents).
    pub max_wait: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_robots: 100_000,
            max_servers: 10_000,
            max_rate: 100_000.0,
            max_connections: 64,
            max_pending_per_peer: 8,
            handshake: Duration::from_secs(10),
            max_wait: Duration::from_secs(3600),
        }
    }
}

/// Where this agent's robots may send traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// No `--allow-target`: the run's own origin servers and the proxy
    /// the coordinator names.
    Announced,
    /// Only these (`--allow-target`), besides the agent's own servers.
    Only(Vec<DestRule>),
}

/// The longest run id accepted (it names a directory).
const MAX_RUN_ID: usize = 200;

/// Whether `id` is a plain name: letters, digits, `.`, `_`, `-`, starting
/// with a letter or digit (so never `..`, `/x` or a hidden file).
pub fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_RUN_ID
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A run id made of `name` (a run directory's name): whatever is not a
/// plain name's character becomes `_`.
pub fn run_id(name: &str, nonce: u32) -> String {
    let mut clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_RUN_ID - 9)
        .collect();
    if !clean.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        clean.insert(0, 'r');
    }
    format!("{clean}-{nonce:08x}")
}

/// Whether this agent takes `prep`, having `threads` worker threads.
pub fn check_prepare(prep: &Prepare, limits: &Limits, threads: u32) -> Result<(), String> {
    if !valid_run_id(&prep.run_id) {
        return Err(format!(
            "run id {:?} is not a plain name (letters, digits, . _ -, at most {MAX_RUN_ID})",
            prep.run_id.chars().take(64).collect::<String>()
        ));
    }
    let [w0, w1] = prep.workers;
    if w0 > w1 || w1 > prep.total_workers {
        return Err(format!(
            "workers {w0}..{w1} are not a range of the run's {}",
            prep.total_workers
        ));
    }
    if w1 - w0 > threads {
        return Err(format!(
            "asked to run {} workers; this agent has {threads} (--workers)",
            w1 - w0
        ));
    }
    let [s0, s1] = prep.servers;
    let count = prep.workload.servers.count;
    if s0 > s1 || s1 > count {
        return Err(format!(
            "servers {s0}..{s1} are not a range of the workload's {count}"
        ));
    }
    if s1 - s0 > limits.max_servers {
        return Err(format!(
            "asked to run {} origin servers, more than this agent's --max-servers {}",
            s1 - s0,
            limits.max_servers
        ));
    }
    if w0 == w1 {
        return Ok(());
    }
    // This agent's share of the robots and of the rate.
    let share = f64::from(w1 - w0) / f64::from(prep.total_workers.max(1));
    let robots = (f64::from(prep.workload.robots.count) * share).ceil();
    if robots > limits.max_robots as f64 {
        return Err(format!(
            "asked to run {robots} robots, more than this agent's --max-robots {}",
            limits.max_robots
        ));
    }
    let wl = &prep.workload;
    let peak = wl.peak_rate.map_or(0.0, |r| r.per_sec()) * wl.fill_factor().max(1.0);
    let rate = peak * share;
    if !rate.is_finite() || rate > limits.max_rate {
        return Err(format!(
            "asked for {rate:.0} requests/s, more than this agent's --max-rate {}/s",
            limits.max_rate
        ));
    }
    Ok(())
}

fn target(addr: SocketAddr) -> Dest {
    Dest {
        host: Host::Ip(cacheoff_access::unmap(addr.ip())),
        port: addr.port(),
    }
}

fn refused_target(what: &str, addr: SocketAddr, rules: &[DestRule]) -> String {
    let allowed: Vec<String> = rules.iter().map(ToString::to_string).collect();
    format!(
        "{what} {addr} is outside this agent's --allow-target ({}); start the agent with --allow-target {}",
        allowed.join(", "),
        match addr {
            SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
            SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
        }
    )
}

/// Whether robots may go through the proxy or surrogate `via` names.
pub fn check_via(via: &ViaSpec, targets: &Targets) -> Result<(), String> {
    let (what, addr) = match *via {
        ViaSpec::Direct => return Ok(()),
        ViaSpec::Proxy(a) => ("the proxy", a),
        ViaSpec::Surrogate(a) => ("the surrogate", a),
    };
    match targets {
        Targets::Announced => Ok(()),
        Targets::Only(rules) if admitted(rules, &target(addr)) => Ok(()),
        Targets::Only(rules) => Err(refused_target(what, addr, rules)),
    }
}

/// Whether the run's announced origin servers are acceptable: as many as
/// the workload has, this agent's own at their places, and the others
/// within its targets.
pub fn check_servers(
    announced: &[SocketAddr],
    count: u32,
    own: (u32, &[SocketAddr]),
    targets: &Targets,
) -> Result<(), String> {
    if announced.len() != count as usize {
        return Err(format!(
            "{} origin servers announced for a workload of {count}",
            announced.len()
        ));
    }
    let (first, mine) = own;
    for (k, addr) in mine.iter().enumerate() {
        if announced.get(first as usize + k) != Some(addr) {
            return Err(format!(
                "origin server {} announced elsewhere than where this agent bound it ({addr})",
                first as usize + k
            ));
        }
    }
    if let Targets::Only(rules) = targets {
        for (k, &addr) in announced.iter().enumerate() {
            let own = (first as usize..first as usize + mine.len()).contains(&k);
            if !own && !admitted(rules, &target(addr)) {
                return Err(refused_target(&format!("origin server {k}"), addr, rules));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::workload_digest;
    use cacheoff_workload::{load, Overrides};

    fn prep(robots: u32, rate: &str) -> Prepare {
        let mut o = Overrides::default();
        o.set("rate", rate).unwrap();
        let mut wl = load("simple", &o).unwrap();
        // Set past the workload's checks: a coordinator may send anything.
        wl.robots.count = robots;
        Prepare {
            run_id: "r-0000002a".into(),
            workload_digest: workload_digest(&wl),
            workload: wl,
            via: ViaSpec::Direct,
            workers: [0, 2],
            total_workers: 4,
            servers: [0, 1],
            nonce: 42,
        }
    }

    #[test]
    fn run_ids_are_names_never_paths() {
        for ok in ["runs-1-0000002a", "a", "two.b_c-d"] {
            assert!(valid_run_id(ok), "{ok}");
        }
        for bad in [
            "", "..", "../../x", "/etc/x", "a/b", ".hidden", "-x", "a b", "é",
        ] {
            assert!(!valid_run_id(bad), "{bad}");
        }
        assert!(!valid_run_id(&"x".repeat(MAX_RUN_ID + 1)));
        for name in ["../../x", "/abs", "my run", ".", ""] {
            let id = run_id(name, 7);
            assert!(valid_run_id(&id), "{name} -> {id}");
            assert!(!id.contains('/'));
        }
    }

    #[test]
    fn a_share_beyond_the_agent_s_limits_is_refused_by_name() {
        let l = Limits::default();
        assert_eq!(check_prepare(&prep(100, "400/s"), &l, 2), Ok(()));
        let e = check_prepare(&prep(100_000_000, "400/s"), &l, 2).unwrap_err();
        assert!(e.contains("--max-robots"), "{e}");
        let slow = Limits {
            max_rate: 100.0,
            ..Limits::default()
        };
        // 400/s over 2 of 4 workers: 200/s here.
        let e = check_prepare(&prep(100, "400/s"), &slow, 2).unwrap_err();
        assert!(
            e.contains("200 requests/s") && e.contains("--max-rate"),
            "{e}"
        );
        let e = check_prepare(&prep(100, "400/s"), &l, 1).unwrap_err();
        assert!(e.contains("--workers"), "{e}");
        let mut p = prep(100, "400/s");
        p.workers = [0, 100_000];
        p.total_workers = 100_000;
        assert!(check_prepare(&p, &l, 2).is_err());
        let mut p = prep(100, "400/s");
        p.servers = [0, p.workload.servers.count + 1];
        assert!(check_prepare(&p, &l, 2).is_err());
        let mut p = prep(100, "400/s");
        p.run_id = "../../x".into();
        assert!(check_prepare(&p, &l, 2).unwrap_err().contains("plain name"));
    }

    #[test]
    fn targets_outside_the_allow_list_are_refused() {
        let only = Targets::Only(vec!["10.0.0.0/24:3128".parse().unwrap()]);
        let proxy = |a: &str| ViaSpec::Proxy(a.parse().unwrap());
        assert_eq!(check_via(&proxy("10.0.0.5:3128"), &only), Ok(()));
        let e = check_via(&proxy("10.0.1.5:3128"), &only).unwrap_err();
        assert!(e.contains("--allow-target 10.0.1.5:3128"), "{e}");
        assert!(check_via(&proxy("10.0.0.5:22"), &only).is_err());
        assert_eq!(
            check_via(&proxy("192.0.2.1:80"), &Targets::Announced),
            Ok(())
        );
        assert_eq!(check_via(&ViaSpec::Direct, &only), Ok(()));

        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let mine = [a("127.0.0.1:9000")];
        let servers = [a("127.0.0.1:9000"), a("10.0.0.9:3128")];
        assert_eq!(check_servers(&servers, 2, (0, &mine), &only), Ok(()));
        let servers = [a("127.0.0.1:9000"), a("192.0.2.1:80")];
        assert!(check_servers(&servers, 2, (0, &mine), &only).is_err());
        assert_eq!(
            check_servers(&servers, 2, (0, &mine), &Targets::Announced),
            Ok(())
        );
        // Its own server announced somewhere else: refused whatever the list.
        let moved = [a("192.0.2.1:80"), a("127.0.0.1:9000")];
        assert!(check_servers(&moved, 2, (0, &mine), &Targets::Announced).is_err());
        assert!(check_servers(&servers, 3, (0, &mine), &Targets::Announced).is_err());
    }
}
