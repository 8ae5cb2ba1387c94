//! `cacheoff workload list|show|check|addrmap|import`.

use crate::cli::{AddrMapFormat, WorkloadCommand};
use crate::Failure;
use cacheoff_run::console::print;
use cacheoff_workload::{builtin_names, describe, expected_offered, load, Overrides};

pub fn run(cmd: &WorkloadCommand) -> Result<(), Failure> {
    match cmd {
        WorkloadCommand::List => {
            for name in builtin_names() {
                let w = load(name, &Overrides::default()).map_err(Failure::run)?;
                print(&format!("{name:<12} {}", w.description));
            }
            Ok(())
        }
        WorkloadCommand::Show {
            workload,
            settings,
            pgl,
        } => {
            let w = cacheoff_run::workload::load(workload, &settings.0, &pgl.options())?;
            print(&describe(&w));
            let e = expected_offered(&w);
            let pct = |v: f64| format!("{:.1}%", v * 100.0);
            print(&format!(
                "\nExpected offered hit ratio in the measured phase (the plan run without sockets)\n  \
                 {:<22} DHR {}, BHR {} (every revisit of a cachable object, as Web Polygraph counts)\n  \
                 {:<22} DHR {}, BHR {} (leaves out revisits no cache can hit: images of pages first answered 304)",
                "offered",
                pct(e.dhr),
                pct(e.bhr),
                "ideal cache",
                pct(e.dhr_ideal),
                pct(e.bhr_ideal),
            ));
            Ok(())
        }
        WorkloadCommand::Addrmap {
            workload,
            format,
            settings,
            pgl,
        } => {
            let w = cacheoff_run::workload::load(workload, &settings.0, &pgl.options())?;
            print(&addr_map_text(&w, *format)?);
            Ok(())
        }
        WorkloadCommand::Import { file, output, pgl } => {
            let imported = cacheoff_run::workload::import(file, &pgl.options(), output.is_some())?;
            let text = format!(
                "# Imported by cacheoff from {file} (docs/pgl.md).\n{}",
                imported.toml
            );
            // It must load as it is written.
            cacheoff_workload::load_text(file, &text, &Overrides::default())
                .map_err(Failure::usage)?;
            match output {
                Some(path) => {
                    std::fs::write(path, text).map_err(|e| {
                        Failure::run(anyhow::anyhow!("cannot write {}: {e}", path.display()))
                    })?;
                    print(&format!("{file} -> {}", path.display()));
                }
                None => print(text.trim_end()),
            }
            Ok(())
        }
        WorkloadCommand::Check { file, pgl } => {
            let w = cacheoff_run::workload::load(file, &Overrides::default(), &pgl.options())?;
            let total: f64 = w.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
            print(&format!(
                "{file}: ok ({}: {} robots, {} servers, {} phases, {})",
                w.name,
                w.robots.count,
                w.servers.count,
                w.phases.len(),
                cacheoff_base::Dur::secs(total)
            ));
            Ok(())
        }
    }
}

/// The workload's origin servers by name, in a product's form. Their
/// addresses are known beforehand only with a fixed port.
pub fn addr_map_text(
    w: &cacheoff_workload::Workload,
    format: AddrMapFormat,
) -> Result<String, Failure> {
    if w.servers.port == 0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "the servers of {} pick free ports when a run starts: give them one with --server-port PORT",
            w.name
        )));
    }
    let first = u32::from(w.servers.first_ip);
    let addrs: Vec<std::net::SocketAddr> = (0..w.servers.count)
        .map(|i| (std::net::Ipv4Addr::from(first + i), w.servers.port).into())
        .collect();
    let map = cacheoff_workload::AddrMap::for_servers(&addrs);
    use cacheoff_products::render;
    Ok(match format {
        AddrMapFormat::Text => map.to_text(),
        AddrMapFormat::Squid => render::squid_origins(&map),
        AddrMapFormat::Varnish => format!(
            "{}\nsub vcl_recv {{\n{}}}\n",
            render::varnish_backends(&map),
            render::varnish_routing(&map)
        ),
        // Inside `http { }`; `proxy_pass http://$cacheoff_origin;` uses it.
        AddrMapFormat::Nginx => format!(
            "{}\n    map $host $cacheoff_origin {{\n{}    }}\n",
            render::nginx_upstreams(&map),
            render::nginx_origin_map(&map)
        ),
        AddrMapFormat::Trafficserver => render::ats_remap(&map),
    })
}
