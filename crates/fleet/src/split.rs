//! How a run is split among agents: robots by the run's workers (each
//! client agent runs as many of them as it has threads, so its share is
//! an exact fraction of the robots), origin servers evenly among server
//! agents, in the order the agents were named.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// What an agent does in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Robots only.
    Clients,
    /// Origin servers only.
    Servers,
    /// Both (the default).
    Both,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Clients => "clients",
            Role::Servers => "servers",
            Role::Both => "both",
        }
    }
    fn has_clients(self) -> bool {
        self != Role::Servers
    }
    fn has_servers(self) -> bool {
        self != Role::Clients
    }
}

/// One agent's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub workers: Range<u32>,
    pub servers: Range<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("no agent runs robots (give at least one the role clients or both)")]
    NoClients,
    #[error("no agent runs origin servers (give at least one the role servers or both)")]
    NoServers,
    #[error("{agents} agents run origin servers but the workload has only {servers} servers")]
    TooFewServers { agents: usize, servers: u32 },
}

/// Splits a run among agents of `roles` with `threads` worker threads
/// each; returns every agent's part and the run's worker count.
pub fn split(roles: &[(Role, u32)], servers: u32) -> Result<(Vec<Part>, u32), SplitError> {
    let total: u32 = roles
        .iter()
        .filter(|(r, _)| r.has_clients())
        .map(|(_, t)| (*t).max(1))
        .sum();
    if total == 0 {
        return Err(SplitError::NoClients);
    }
    let server_agents = roles.iter().filter(|(r, _)| r.has_servers()).count();
    if server_agents == 0 {
        return Err(SplitError::NoServers);
    }
    if server_agents as u32 > servers {
        return Err(SplitError::TooFewServers {
            agents: server_agents,
            servers,
        });
    }
    let (mut w, mut k) = (0u32, 0u32);
    let parts = roles
        .iter()
        .map(|&(role, threads)| {
            let workers = if role.has_clients() {
                let n = threads.max(1);
                w += n;
                w - n..w
            } else {
                total..total
            };
            let servers = if role.has_servers() {
                let m = server_agents as u64;
                let a = (u64::from(k) * u64::from(servers) / m) as u32;
                k += 1;
                a..(u64::from(k) * u64::from(servers) / m) as u32
            } else {
                0..0
            };
            Part { workers, servers }
        })
        .collect();
    Ok((parts, total))
}

/// An exact fraction, lowest terms: `"2/6"` is written `"1/3"`.
pub fn fraction(num: u32, den: u32) -> String {
    if num == 0 {
        return "0".into();
    }
    let g = gcd(num, den);
    if num == den {
        "1".into()
    } else {
        format!("{}/{}", num / g, den / g)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_split_by_threads_and_servers_evenly() {
        let roles = [
            (Role::Clients, 2),
            (Role::Clients, 1),
            (Role::Servers, 4),
            (Role::Both, 3),
        ];
        let (parts, total) = split(&roles, 7).unwrap();
        assert_eq!(total, 6);
        let workers: Vec<_> = parts.iter().map(|p| p.workers.clone()).collect();
        assert_eq!(workers, vec![0..2, 2..3, 6..6, 3..6]);
        let servers: Vec<_> = parts.iter().map(|p| p.servers.clone()).collect();
        assert_eq!(servers, vec![0..0, 0..0, 0..3, 3..7]);
        // Every worker and server exactly once.
        let w: u32 = parts.iter().map(|p| p.workers.len() as u32).sum();
        let s: u32 = parts.iter().map(|p| p.servers.len() as u32).sum();
        assert_eq!((w, s), (6, 7));
    }

    #[test]
    fn any_number_of_agents_covers_every_server_once() {
        for agents in 1..=9u32 {
            for servers in agents..=20 {
                let roles: Vec<_> = (0..agents).map(|_| (Role::Both, 2)).collect();
                let (parts, total) = split(&roles, servers).unwrap();
                assert_eq!(total, 2 * agents);
                let mut next = 0;
                for p in &parts {
                    assert_eq!(p.servers.start, next);
                    assert!(!p.servers.is_empty());
                    next = p.servers.end;
                }
                assert_eq!(next, servers);
            }
        }
    }

    #[test]
    fn a_split_without_clients_or_servers_is_refused() {
        assert_eq!(split(&[(Role::Servers, 2)], 4), Err(SplitError::NoClients));
        assert_eq!(split(&[(Role::Clients, 2)], 4), Err(SplitError::NoServers));
        assert!(matches!(
            split(&[(Role::Both, 1), (Role::Both, 1)], 1),
            Err(SplitError::TooFewServers { .. })
        ));
    }

    #[test]
    fn fractions_are_exact_and_reduced() {
        assert_eq!(fraction(2, 6), "1/3");
        assert_eq!(fraction(3, 3), "1");
        assert_eq!(fraction(0, 3), "0");
        assert_eq!(fraction(4, 7), "4/7");
    }
}
