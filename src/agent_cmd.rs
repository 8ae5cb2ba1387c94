//! `cacheoff agent`: listens, then serves coordinators' runs
//! (`cacheoff_fleet::serve`).

use crate::cli::{AgentArgs, FleetArgs, TrustArgs};
use crate::Failure;
use anyhow::Context;
use cacheoff_fleet::{AgentAddr, AgentConfig, Fleet, Role, Source};
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: &AgentArgs) -> Result<(), Failure> {
    let source = trust_source(&a.trust)?;
    let trust = cacheoff_fleet::AgentTrust::load(&source)
        .context("the fleet's credentials")
        .map_err(Failure::usage)?;
    let listener = std::net::TcpListener::bind(&a.listen)
        .with_context(|| format!("--listen {}: cannot listen", a.listen))
        .map_err(Failure::usage)?;
    let addr = listener.local_addr().map_err(Failure::run)?;
    let workers = crate::cli::workers(a.workers);
    let data = a
        .data
        .clone()
        .unwrap_or_else(|| cacheoff_fleet::default_data(addr.port()));
    let limits = cacheoff_fleet::Limits {
        max_robots: a.max_robots,
        max_servers: a.max_servers,
        max_rate: a.max_rate,
        max_connections: a.max_connections.max(1),
        ..cacheoff_fleet::Limits::default()
    };
    let targets = if a.allow_target.is_empty() {
        cacheoff_fleet::Targets::Announced
    } else {
        cacheoff_fleet::Targets::Only(a.allow_target.clone())
    };
    let cfg = AgentConfig {
        build: cacheoff_run::build(),
        host_ip: a.host_ip,
        data: data.clone(),
        workers,
        runs: a.runs,
        trust,
        limits,
        targets,
    };
    let say = |line: &str| eprintln!("cacheoff agent: {line}");
    if cfg.trust.is_insecure() {
        say(cacheoff_fleet::INSECURE_WARNING);
    }
    match &cfg.targets {
        cacheoff_fleet::Targets::Announced => say(
            "no --allow-target: its robots go where an authenticated coordinator's run says (its origin servers, its proxy)",
        ),
        cacheoff_fleet::Targets::Only(rules) => say(&format!(
            "robots may reach: {} and this agent's own origin servers",
            rules.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )),
    }
    println!(
        "cacheoff agent listening on {addr} ({workers} workers, {}, logs in {})",
        match source {
            Source::Dir(_) => "mutual TLS, fleet from --fleet-dir",
            Source::Secret(_) => "mutual TLS, fleet from --secret-file",
            Source::Insecure => "INSECURE: plaintext, anyone",
        },
        data.display()
    );
    cacheoff_fleet::serve(
        listener,
        cfg,
        Arc::new(|line: &str| eprintln!("cacheoff agent: {line}")),
    )
    .map_err(|e| match e {
        cacheoff_fleet::FleetError::Data { .. } => Failure::usage(e),
        e => Failure::run(anyhow::Error::new(e).context("agent failed")),
    })
}

/// Where the fleet's credentials come from; one of the three must be
/// named, plaintext only by `--insecure`.
pub fn trust_source(t: &TrustArgs) -> Result<Source, Failure> {
    match (&t.fleet_dir, &t.secret_file, t.insecure) {
        (Some(d), _, _) => Ok(Source::Dir(d.clone())),
        (_, Some(f), _) => Ok(Source::Secret(f.clone())),
        (None, None, true) => Ok(Source::Insecure),
        (None, None, false) => Err(Failure::usage(anyhow::anyhow!(
            "a fleet needs credentials: --fleet-dir DIR (made by `cacheoff tls DIR`) or --secret-file FILE on the agents and the coordinator alike; --insecure for plaintext links anyone can drive"
        ))),
    }
}

/// The fleet `--agents`, `--roles` and `--agents-file` name (`None`:
/// a run on this host alone).
pub fn fleet(a: &FleetArgs) -> Result<Option<Fleet>, Failure> {
    let mut agents: Vec<AgentAddr> = Vec::new();
    let mut add = |addr: &str, role: Role| -> Result<(), Failure> {
        let addr = addr.trim();
        if addr.is_empty() {
            return Ok(());
        }
        if !addr.contains(':') {
            return Err(Failure::usage(anyhow::anyhow!(
                "agent {addr}: give HOST:PORT"
            )));
        }
        match agents.iter_mut().find(|x| x.addr == addr) {
            Some(x) if role != Role::Both => x.role = role,
            Some(_) => {}
            None => agents.push(AgentAddr {
                addr: addr.into(),
                role,
            }),
        }
        Ok(())
    };
    for addr in &a.agents {
        add(addr, Role::Both)?;
    }
    if let Some(path) = &a.agents_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--agents-file {}", path.display()))
            .map_err(Failure::usage)?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            let Some(addr) = words.next() else { continue };
            let role = match words.next() {
                None => Role::Both,
                Some(r) => parse_role(r).ok_or_else(|| {
                    Failure::usage(anyhow::anyhow!(
                        "{}:{}: role {r:?} is not clients, servers or both",
                        path.display(),
                        n + 1
                    ))
                })?,
            };
            add(addr, role)?;
        }
    }
    for spec in &a.roles {
        for part in spec.split_whitespace() {
            let (role, addrs) = part.split_once('=').ok_or_else(|| {
                Failure::usage(anyhow::anyhow!(
                    "--roles {part}: expected clients=HOST:PORT,... or servers=HOST:PORT,..."
                ))
            })?;
            let role = parse_role(role).ok_or_else(|| {
                Failure::usage(anyhow::anyhow!(
                    "--roles {part}: role {role:?} is not clients, servers or both"
                ))
            })?;
            for addr in addrs.split(',') {
                add(addr, role)?;
            }
        }
    }
    if agents.is_empty() {
        return Ok(None);
    }
    let source = trust_source(&a.trust)?;
    if source == Source::Insecure {
        eprintln!("warning: {}", cacheoff_fleet::INSECURE_WARNING);
    }
    let trust = cacheoff_fleet::CoordinatorTrust::load(&source)
        .context("the fleet's credentials")
        .map_err(Failure::usage)?;
    Ok(Some(Fleet {
        trust,
        agents,
        wait: a.agent_wait.0,
        max_skew: a.max_skew.0,
        version: cacheoff_fleet::version_of(&cacheoff_run::build()),
        lost_after: Duration::from_secs(10),
    }))
}

fn parse_role(s: &str) -> Option<Role> {
    match s {
        "clients" | "client" => Some(Role::Clients),
        "servers" | "server" => Some(Role::Servers),
        "both" => Some(Role::Both),
        _ => None,
    }
}
