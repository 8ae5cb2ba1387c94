//! `cacheoff agent`: listens, then serves coordinators' runs
//! (`cacheoff_fleet::serve`).

use crate::cli::{AgentArgs, FleetArgs};
use crate::Failure;
use anyhow::Context;
use cacheoff_fleet::{AgentAddr, AgentConfig, Fleet, Role};
use std::sync::Arc;
use std::time::Duration;

pub fn run(a: &AgentArgs) -> Result<(), Failure> {
    let listener = std::net::TcpListener::bind(&a.listen)
        .with_context(|| format!("--listen {}: cannot listen", a.listen))
        .map_err(Failure::usage)?;
    let addr = listener.local_addr().map_err(Failure::run)?;
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let cfg = AgentConfig {
        build: crate::run_cmd::build(),
        host_ip: a.host_ip,
        data: a.data.clone(),
        workers,
        runs: a.runs,
    };
    println!(
        "cacheoff agent listening on {addr} ({workers} workers, logs in {})",
        a.data.display()
    );
    cacheoff_fleet::serve(
        listener,
        cfg,
        Arc::new(|line: &str| eprintln!("cacheoff agent: {line}")),
    )
    .context("agent failed")
    .map_err(Failure::run)
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
    Ok(Some(Fleet {
        agents,
        wait: a.agent_wait.0,
        max_skew: a.max_skew.0,
        version: cacheoff_fleet::version_of(&crate::run_cmd::build()),
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
