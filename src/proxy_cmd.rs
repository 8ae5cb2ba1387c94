//! `cacheoff proxy`: the reference proxy (or the Collector) until SIGINT
//! or SIGTERM.

use crate::cli::ProxyArgs;
use crate::Failure;
use anyhow::Context;
use cacheoff_proxy::{Proxy, ProxyConfig, Role, Upstream};
use cacheoff_run::console;
use std::collections::HashMap;

pub fn config(a: &ProxyArgs) -> Result<ProxyConfig, Failure> {
    let mut c = ProxyConfig::new(a.listen);
    c.memory = a.mem.0;
    c.disk = a.disk.clone().map(|d| (d, a.disk_size.0));
    c.upstream = match (&a.origin, &a.origin_map) {
        (Some(o), _) => {
            if !o.contains(':') {
                return Err(Failure::usage(anyhow::anyhow!(
                    "--origin {o:?}: expected HOST:PORT"
                )));
            }
            Upstream::Reverse(o.clone())
        }
        (None, Some(path)) => Upstream::ByHost(std::sync::Arc::new(origin_map(path)?)),
        (None, None) => Upstream::Forward,
    };
    if !a.targeted_field.is_empty() && c.upstream == Upstream::Forward {
        return Err(Failure::usage(anyhow::anyhow!(
            "--targeted-field needs reverse mode (--origin or --origin-map)"
        )));
    }
    if c.upstream != Upstream::Forward {
        c.targeted = if a.targeted_field.is_empty() {
            cacheoff_cache::Targeted::cdn()
        } else {
            cacheoff_cache::Targeted {
                fields: a.targeted_field.clone(),
            }
        };
    }
    c.role = if a.collector {
        Role::Collector
    } else {
        Role::Proxy
    };
    if let Some(p) = &a.parent {
        let valid = matches!(p.rsplit_once(':'), Some((h, port)) if !h.is_empty() && port.parse::<u16>().is_ok());
        if !valid {
            return Err(Failure::usage(anyhow::anyhow!(
                "--parent {p:?}: expected HOST:PORT"
            )));
        }
        c.parent = Some(p.clone());
    }
    c.policy = a.policy;
    c.allow = a.allow.clone();
    c.allow_dest = (!a.allow_dest.is_empty()).then(|| a.allow_dest.clone());
    c.max_client_connections = a.max_client_connections.max(1);
    c.access_log = a.access_log.clone();
    c.max_object = a.max_object.0;
    c.max_header = usize::try_from(a.max_header.0).unwrap_or(usize::MAX);
    c.max_request_body = a.max_request_body.0;
    c.max_buffered_uploads = a.max_buffered_uploads.0;
    c.connect_timeout = a.connect_timeout.0;
    c.read_timeout = a.read_timeout.0;
    c.client_idle_timeout = a.client_idle_timeout.0;
    c.client_write_timeout = a.client_write_timeout.0;
    c.client_header_timeout = a.client_header_timeout.0;
    c.client_body_min_rate = a.client_body_min_rate.0;
    if a.collapse_wait.0.is_zero() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--collapse-wait 0: every waiter would fetch at once; give a time"
        )));
    }
    c.collapse_wait = a.collapse_wait.0;
    c.collapse_min_rate = a.collapse_min_rate.0;
    c.pool_idle_timeout = a.pool_idle_timeout.0;
    c.pool_per_origin = a.pool_per_origin;
    if let Some(w) = a.workers {
        c.workers = w.max(1);
    }
    c.reply_framing = a.reply_framing;
    c.faults = cacheoff_proxy::Faults::new(a.faults.clone());
    c.capacity = a.capacity.map(|r| r.per_sec());
    Ok(c)
}

/// `--origin-map FILE`: origin names to `host:port`.
fn origin_map(path: &std::path::Path) -> Result<HashMap<String, String>, Failure> {
    let bad =
        |why: String| Failure::usage(anyhow::anyhow!("--origin-map {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let map = cacheoff_workload::AddrMap::parse(&text).map_err(|e| bad(e.to_string()))?;
    Ok(map
        .entries()
        .iter()
        .map(|(name, addr)| (name.clone(), addr.to_string()))
        .collect())
}

/// The Collector's precision, beside the SPE paper's modified Squid.
pub fn replay_line(p: &Proxy) -> String {
    let r = p.replay_precision();
    format!(
        "collector replay: {} hits, |miss - hit| mean {:.3} ms, median {:.3} ms; {} hit pairs, |hit - hit| mean {:.3} ms, median {:.3} ms (SPE paper: |miss - hit| mean 7.44 ms, median 6.34 ms)",
        r.hits,
        r.miss_hit_mean_ms,
        r.miss_hit_median_ms,
        r.hit_pairs,
        r.hit_hit_mean_ms,
        r.hit_hit_median_ms
    )
}

pub fn run(a: &ProxyArgs) -> Result<(), Failure> {
    let cfg = config(a)?;
    // Each client connection may need one upstream too, plus the store's
    // files and listeners. Past the limit the proxy answers 503 rather
    // than failing, so a limit too low for the setting is said, not fatal.
    let needed = 2 * cfg.max_client_connections as u64 + 1024;
    if let Err(e) = cacheoff_agent::raise_fd_limit(needed) {
        eprintln!(
            "cacheoff proxy: --max-client-connections {}: {e}",
            cfg.max_client_connections
        );
    }
    let proxy = Proxy::start(cfg)
        .context("cannot start the proxy")
        .map_err(Failure::usage)?;
    let c = proxy.config();
    let mode = match (&c.upstream, c.role) {
        (_, Role::Collector) => "SPE Collector".to_string(),
        (Upstream::Forward, Role::Proxy) => "forward proxy".to_string(),
        (Upstream::Reverse(o), Role::Proxy) => format!("reverse proxy for {o}"),
        (Upstream::ByHost(m), Role::Proxy) => {
            format!("surrogate for {} origins by Host", m.len())
        }
    };
    let disk = match (&c.disk, proxy.disk_report()) {
        (Some((dir, size)), Some(r)) => format!(
            ", disk {} in {} ({} objects, {} found, {} damaged files dropped)",
            cacheoff_base::Bytes(*size),
            dir.display(),
            r.objects,
            cacheoff_base::Bytes(r.bytes),
            r.discarded
        ),
        _ => String::new(),
    };
    console::print(&format!(
        "cacheoff {} {mode} on {}: memory {} ({}){disk}; stop with Ctrl-C",
        env!("CARGO_PKG_VERSION"),
        proxy.addr(),
        cacheoff_base::Bytes(c.memory),
        c.policy.name(),
    ));
    // After the first line, which scripts read for the address.
    for (f, p) in c.faults.list() {
        console::print(&format!(
            "fault {} on {:.0}% of requests: {}",
            f.name(),
            p * 100.0,
            f.description()
        ));
    }
    let _metrics = match a.metrics {
        Some(addr) => {
            let mut reg = cacheoff_metrics::Registry::default();
            reg.register_collector(Box::new(cacheoff_metrics::ProxyCollector::new(
                proxy.probe(),
            )));
            Some(cacheoff_run::metrics::serve_metrics(addr, reg)?)
        }
        None => None,
    };
    cacheoff_run::signals::wait();
    console::print(&console::counters_line(&proxy));
    if proxy.config().role == Role::Collector {
        console::print(&replay_line(&proxy));
    }
    proxy.stop();
    Ok(())
}
