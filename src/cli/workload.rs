//! `cacheoff workload` and the workload settings every command that runs
//! a workload takes: the overrides table's flags and how `.pg` files are
//! read.

use cacheoff_workload::Overrides;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum WorkloadCommand {
    /// The built-in workloads, one line each.
    List,
    /// Every parameter and phase of a workload, in plain English.
    Show {
        /// A built-in workload name, a workload file (TOML) or a Web
        /// Polygraph workload file (.pg).
        workload: String,
        // --rate, --plateau, ... as for `run`.
        #[command(flatten)]
        settings: Box<WorkloadArgs>,
        #[command(flatten)]
        pgl: PglArgs,
    },
    /// Check a workload file; errors name the line and column.
    Check {
        /// Workload file (TOML or .pg) or built-in name.
        file: String,
        #[command(flatten)]
        pgl: PglArgs,
    },
    /// A Web Polygraph workload file (.pg, PGL) as a cacheoff workload
    /// file (TOML): printed, or written to -o FILE.
    Import {
        /// The PGL file.
        file: String,
        /// Write the workload here instead of printing it.
        #[arg(short = 'o', long = "output", value_name = "FILE.toml")]
        output: Option<std::path::PathBuf>,
        #[command(flatten)]
        pgl: PglArgs,
    },
    /// The origin servers by name, for configuring a surrogate before
    /// `run --reverse HOST:PORT` (needs --server-port).
    Addrmap {
        /// A built-in workload name or a workload file (TOML).
        workload: String,
        /// text (what `cacheoff proxy --origin-map` reads), squid
        /// (cache_peer lines), varnish (backends and Host routing), nginx
        /// (upstreams and a map) or trafficserver (remap.config).
        #[arg(long, value_enum, default_value = "text")]
        format: AddrMapFormat,
        // --server-port, --servers, ... as for `run`.
        #[command(flatten)]
        settings: Box<WorkloadArgs>,
        #[command(flatten)]
        pgl: PglArgs,
    },
}

/// How the files a workload names are read, and Web Polygraph workload
/// files (.pg).
#[derive(Debug, Clone, Default, Args)]
pub struct PglArgs {
    /// A directory a workload's #include and table() files may come from
    /// besides its own, searched after it (repeatable, in order); or a
    /// file allowed alone. Nothing outside these is read.
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<std::path::PathBuf>,
    /// Warn about what cacheoff does not model in a .pg file and go on
    /// without it, instead of refusing the file.
    #[arg(long)]
    pub lenient: bool,
}

impl PglArgs {
    /// How `cacheoff_pgl` reads the file.
    pub fn options(&self) -> cacheoff_pgl::Options {
        cacheoff_pgl::Options {
            include: self.include.clone(),
            lenient: self.lenient,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AddrMapFormat {
    Text,
    Squid,
    Varnish,
    Nginx,
    Trafficserver,
}

/// The workload settings of `cacheoff run`: one flag per row of the
/// workload's parameter table ([`Overrides::PARAMS`]), which gives each its
/// name, value name, help line and parser.
#[derive(Debug, Clone, Default)]
pub struct WorkloadArgs(pub Overrides);

impl Args for WorkloadArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Overrides::PARAMS.iter().fold(cmd, |cmd, p| {
            let arg = clap::Arg::new(p.flag)
                .long(p.flag)
                .value_name(p.value_name)
                .help(p.help);
            let arg = match p.bare {
                Some(v) => arg.num_args(0..=1).default_missing_value(v),
                None => arg,
            }
            // Checked here so that clap names the flag in the error.
            .value_parser(move |text: &str| {
                Overrides::default()
                    .set(p.flag, text)
                    .map(|()| text.to_string())
            });
            cmd.arg(match p.alias {
                Some(alias) => arg.visible_alias(alias),
                None => arg,
            })
        })
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for WorkloadArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut a = WorkloadArgs::default();
        a.update_from_arg_matches(m)?;
        Ok(a)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for p in Overrides::PARAMS {
            if let Some(text) = m.get_one::<String>(p.flag) {
                self.0
                    .set(p.flag, text)
                    .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e))?;
            }
        }
        Ok(())
    }
}
