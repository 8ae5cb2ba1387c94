//! `cacheoff multiplier`: the SPE Multiplier (`cacheoff_multiplier`) as a
//! command: starts it, prints a line per interval, and on SIGINT/SIGTERM
//! stops it, writes the summary and the report page, and prints the
//! ranking.

use crate::cli::MultiplierArgs;
use crate::Failure;
use anyhow::Context;
use cacheoff_multiplier::{parse_proxies, Config, Interval, Summary};
use cacheoff_run::console;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;

/// Runs `cacheoff multiplier` until a signal; the summary it wrote.
pub fn run(a: &MultiplierArgs, argv: &[String]) -> Result<Summary, Failure> {
    let collector = resolve(&a.collector)?;
    let proxies = parse_proxies(&a.proxies).map_err(Failure::usage)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| cacheoff_rundir::RunDir::default_path("multiplier"));
    cacheoff_run::preflight::check(collector)?;
    for p in &proxies {
        cacheoff_run::preflight::check(p.addr)
            .with_context(|| format!("proxy under test {}", p.name))
            .map_err(Failure::usage)?;
    }
    raise_fds_for(proxies.len(), a.conns, a.max_client_connections)?;
    let mut cfg = Config::new(a.listen, collector, proxies, out.clone());
    cfg.queue = a.queue.max(1);
    cfg.conns_per_proxy = a.conns.max(1);
    cfg.copy_unsafe = a.copy_unsafe;
    cfg.max_queued_bytes = a.max_queued_bytes.0;
    cfg.copy_timeout = a.copy_timeout.0;
    cfg.allow = a.allow.clone();
    cfg.allow_dest = (!a.allow_dest.is_empty()).then(|| a.allow_dest.clone());
    cfg.max_client_connections = a.max_client_connections.max(1);
    cfg.client_idle_timeout = a.client_idle_timeout.0;
    cfg.client_header_timeout = a.client_header_timeout.0;
    cfg.client_body_min_rate = a.client_body_min_rate.0;
    cfg.max_buffered_uploads = a.max_buffered_uploads.0;
    cfg.max_request_body = a.max_request_body.0;
    if let Some(w) = a.workers {
        cfg.workers = w.max(1);
    }
    cfg.argv = argv.to_vec();
    cfg.build = cacheoff_run::build();
    let mut server = None;
    let mut metrics = None;
    if let Some(addr) = a.metrics {
        let mut reg = cacheoff_metrics::Registry::default();
        let names: Vec<String> = cfg.proxies.iter().map(|p| p.name.clone()).collect();
        metrics = Some(cacheoff_metrics::SpeMetrics::register(&mut reg, &names));
        server = Some(cacheoff_run::metrics::serve_metrics(addr, reg)?);
    }
    if let Some((sample, watched)) = watches(&a.watch, &cfg.proxies)? {
        cfg.sample = Some(sample);
        cfg.watched = watched;
    }
    let quiet = a.quiet;
    if !quiet || metrics.is_some() {
        cfg.on_interval = Some(Arc::new(move |iv: &Interval| {
            if let Some(m) = &metrics {
                m.interval(iv);
            }
            if !quiet {
                console::print(&line(iv));
            }
        }));
    }
    let stop = cacheoff_agent::StopHandle::new();
    cacheoff_run::signals::stop_runs_on_signals(&stop);
    let m = cacheoff_multiplier::start(cfg)
        .context("cannot start the Multiplier")
        .map_err(Failure::usage)?;
    console::print(&format!(
        "cacheoff {} multiplier on {}: Collector {collector}, copies to {} -> {}",
        env!("CARGO_PKG_VERSION"),
        m.addr(),
        a.proxies.join(", "),
        out.display()
    ));
    while !stop.is_stopped() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    console::print("cacheoff: stopping the Multiplier (copies in flight may take a moment)");
    let refusals = refusals(&m);
    let summary = m
        .stop()
        .context("the Multiplier failed")
        .map_err(Failure::run)?;
    conclude(&out, &summary);
    if !refusals.is_empty() {
        console::print(&format!("refused: {refusals}"));
    }
    if let Some(s) = server {
        let seen = s.scrapes();
        s.wait_for_scrape(seen, cacheoff_run::metrics::METRICS_LINGER);
    }
    Ok(summary)
}

/// Connections to each proxy under test and to the Collector, and the
/// clients' up to the default cap: the soft descriptor limit raised for
/// them, or a clear error.
pub fn raise_fds(proxies: usize, conns: usize) -> Result<(), Failure> {
    let here = SocketAddr::from(([127, 0, 0, 1], 0));
    let cap = Config::new(here, here, Vec::new(), Default::default()).max_client_connections;
    raise_fds_for(proxies, conns, cap)
}

/// [`raise_fds`] for up to `clients` client connections.
pub fn raise_fds_for(proxies: usize, conns: usize, clients: usize) -> Result<(), Failure> {
    let needed = ((proxies + 1) * conns + clients + 256) as u64;
    cacheoff_agent::raise_fd_limit(needed).map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "{e}: the Multiplier may keep {conns} connections to each of {proxies} proxies and {clients} client connections; raise the limit or give --conns or --max-client-connections"
        ))
    })
}

/// What the Multiplier refused, by kind ("loop 2, dest_denied 1"); empty
/// if nothing.
fn refusals(m: &cacheoff_multiplier::Multiplier) -> String {
    cacheoff_multiplier::Refusal::ALL
        .iter()
        .map(|&k| (k, m.refusals(k)))
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{} {n}", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The ranking and where the results are.
pub fn conclude(out: &Path, s: &Summary) {
    console::print(&format!(
        "{} requests from clients in {:.1} s",
        s.requests, s.duration_s
    ));
    for p in &s.proxies {
        let span = &p.span;
        console::print(&format!(
            "  {:<16} copied {:>8} dropped {:>6} hits claimed {:>5.1}% validated {:>5.1}%  rt mean {:>8.2} ms  mismatches {}{}{}",
            span.name,
            span.counts.copied,
            span.counts.dropped,
            p.claimed_hit_ratio,
            p.validated_hit_ratio,
            span.rt_ms.all.mean,
            span.counts.mismatches,
            if span.counts.unfinished > 0 {
                format!("  unfinished at stop {}", span.counts.unfinished)
            } else {
                String::new()
            },
            if p.overloaded { "  OVERLOADED" } else { "" }
        ));
    }
    for r in &s.ranking {
        match (r.rank, &r.reason) {
            (Some(n), _) => {
                console::print(&format!("  #{n} {} ({:.2} ms mean)", r.name, r.mean_rt_ms))
            }
            (None, Some(why)) => console::print(&format!("  -- {}: {why}", r.name)),
            (None, None) => {}
        }
    }
    console::print(&format!("run directory: {}", out.display()));
    match cacheoff_report::write_page(out) {
        Ok(path) => console::print(&format!("report: {}", path.display())),
        Err(e) => console::print(&format!(
            "cacheoff: warning: cannot render the report: {e:#}"
        )),
    }
}

/// One live line: requests, and per proxy copies, drops, mismatches.
pub fn line(iv: &Interval) -> String {
    let secs = (iv.end_s - iv.start_s).max(1e-9);
    let mut s = format!(
        "{:>7.1}s  {:>8.1} req/s  collector {:>7.2} ms",
        iv.end_s,
        iv.requests as f64 / secs,
        iv.collector.rt_ms.all.mean
    );
    for p in &iv.proxies {
        s.push_str(&format!(
            "  | {} {:.2} ms{}{}",
            p.name,
            p.rt_ms.all.mean,
            if p.counts.dropped > 0 {
                format!(" dropped {}", p.counts.dropped)
            } else {
                String::new()
            },
            if p.counts.mismatches > 0 {
                format!(" MISMATCHES {}", p.counts.mismatches)
            } else {
                String::new()
            }
        ));
    }
    s
}

fn resolve(hostport: &str) -> Result<SocketAddr, Failure> {
    hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            Failure::usage(anyhow::anyhow!(
                "--collector {hostport:?}: expected HOST:PORT"
            ))
        })
}

/// What `--watch` watches, by proxy name.
type Watched = std::collections::BTreeMap<String, String>;

/// `--watch [NAME=]PID|CGROUP-PATH`s: one sampler per named proxy under
/// test, read together once per interval, and what each watches.
fn watches(
    args: &[String],
    proxies: &[cacheoff_multiplier::ProxyUnderTest],
) -> Result<Option<(cacheoff_multiplier::SampleHook, Watched)>, Failure> {
    let mut named = Vec::new();
    for arg in args {
        let (name, target) = match arg.split_once('=') {
            Some((n, t)) => (n.to_string(), t),
            None if proxies.len() == 1 => (proxies[0].name.clone(), arg.as_str()),
            None => {
                return Err(Failure::usage(anyhow::anyhow!(
                    "--watch {arg}: which proxy? give NAME=PID|CGROUP-PATH (the names of --proxy NAME=HOST:PORT)"
                )))
            }
        };
        if !proxies.iter().any(|p| p.name == name) {
            return Err(Failure::usage(anyhow::anyhow!(
                "--watch {arg}: no proxy under test is named {name:?}"
            )));
        }
        named.push((name, cacheoff_run::watch::Watch::parse(target)?));
    }
    if named.is_empty() {
        return Ok(None);
    }
    let watched = named
        .iter()
        .map(|(n, w)| (n.clone(), w.describe()))
        .collect();
    let named = std::sync::Mutex::new(named);
    let sample: cacheoff_multiplier::SampleHook = Arc::new(move || {
        let mut named = named.lock().unwrap_or_else(|e| e.into_inner());
        named
            .iter_mut()
            .map(|(n, w)| (n.clone(), w.interval()))
            .collect()
    });
    Ok(Some((sample, watched)))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `cacheoff multiplier --help`, as the command prints it.
    fn help() -> String {
        let mut cli = crate::cli::Cli::command();
        let m = cli
            .find_subcommand_mut("multiplier")
            .expect("a multiplier command");
        m.render_long_help().to_string()
    }

    /// Each option of the help with a `[default: ...]`: its long name and
    /// that value.
    fn defaults(help: &str) -> Vec<(String, String)> {
        let mut blocks: Vec<(String, String)> = Vec::new();
        for line in help.lines() {
            let t = line.trim_start();
            let flag = t.strip_prefix("--").or_else(|| {
                t.strip_prefix('-')
                    .and_then(|r| r.split_once(", --"))
                    .map(|(_, r)| r)
            });
            match flag {
                Some(f) if t.len() < line.len() => {
                    let name = f.split([' ', '<', '=']).next().unwrap_or_default();
                    blocks.push((name.to_string(), t.to_string()));
                }
                _ => {
                    if let Some(b) = blocks.last_mut() {
                        b.1.push(' ');
                        b.1.push_str(t);
                    }
                }
            }
        }
        blocks
            .into_iter()
            .filter_map(|(name, text)| {
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                let (_, rest) = text.split_once("[default: ")?;
                Some((name, rest.split(']').next()?.to_string()))
            })
            .collect()
    }

    #[test]
    fn access_and_byte_limits_parse_as_the_proxy_s() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "cacheoff",
            "multiplier",
            "--collector",
            "127.0.0.1:1",
            "--proxy",
            "a=127.0.0.1:2",
            "--allow",
            "10.0.0.0/8",
            "--allow",
            "192.0.2.7/32",
            "--allow-dest",
            "*.example.com:80",
            "--allow-dest",
            "[2001:db8::/32]:443",
            "--max-queued-bytes",
            "32MB",
        ])
        .unwrap();
        let crate::cli::Command::Multiplier(a) = cli.command else {
            panic!("not the multiplier");
        };
        assert_eq!(a.allow.len(), 2);
        let rules: Vec<String> = a.allow_dest.iter().map(ToString::to_string).collect();
        assert_eq!(rules, ["*.example.com:80", "[2001:db8::/32]:443"]);
        assert_eq!(a.max_queued_bytes.0, 32 << 20);
        for bad in [["--allow", "10.0.0.0/33"], ["--allow-dest", "*:0"]] {
            let mut argv = vec![
                "cacheoff",
                "multiplier",
                "--collector",
                "h:1",
                "--proxy",
                "a=h:2",
            ];
            argv.extend(bad);
            assert!(crate::cli::Cli::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_documented_defaults_are_the_command_s() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/multiplier.md"))
                .unwrap();
        let found = defaults(&help());
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        for flag in [
            "queue",
            "conns",
            "max-queued-bytes",
            "copy-timeout",
            "max-client-connections",
            "client-header-timeout",
            "client-idle-timeout",
            "client-body-min-rate",
            "max-buffered-uploads",
        ] {
            assert!(
                names.contains(&flag),
                "--{flag} shows no default: {names:?}"
            );
        }
        for (flag, value) in &found {
            let cell = format!("| `--{flag}` |");
            let row = doc
                .lines()
                .find(|l| l.contains(&cell))
                .unwrap_or_else(|| panic!("docs/multiplier.md has no settings row for --{flag}"));
            assert!(
                row.contains(&format!("| `{value}` |")),
                "--help says --{flag} defaults to {value}; docs/multiplier.md says: {row}"
            );
        }
        // In-process runs (the lineup, tests) start from the same values.
        let here = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let cfg = cacheoff_multiplier::Config::new(here, here, Vec::new(), Default::default());
        for (flag, value) in [("queue", cfg.queue), ("conns", cfg.conns_per_proxy)] {
            assert!(
                found.contains(&(flag.into(), value.to_string())),
                "--{flag}: {found:?}"
            );
        }
    }
}
