//! The `cacheoff` command: argument parsing ([`cli`]) and the
//! subcommands, each parsing its arguments into the library that does the
//! work (a run's front end is `cacheoff_run`) and printing.
//!
//! `main` only parses and maps [`Failure`] to an exit code; tests call
//! [`run`] or the subcommand functions in-process.

pub mod ab_cmd;
pub mod agent_cmd;
pub mod cli;
pub mod conform_cmd;
mod curve_cmd;
pub mod lineup;
mod lineup_cmd;
pub mod msl_cmd;
pub mod multiplier_cmd;
pub mod peak_cmd;
pub mod proxy_cmd;
pub mod replay_cmd;
pub mod report_cmd;
pub mod run_cmd;
mod sample_trace;
mod tls_cmd;
pub mod workload_cmd;

/// A failed command: the error and the exit code it maps to
/// (1 = the run failed, 2 = usage or configuration error).
#[derive(Debug)]
pub struct Failure {
    pub error: anyhow::Error,
    pub code: u8,
}

impl Failure {
    pub fn usage(e: impl Into<anyhow::Error>) -> Failure {
        Failure {
            error: e.into(),
            code: 2,
        }
    }
    pub fn run(e: impl Into<anyhow::Error>) -> Failure {
        Failure {
            error: e.into(),
            code: 1,
        }
    }
}

impl From<cacheoff_run::RunError> for Failure {
    fn from(e: cacheoff_run::RunError) -> Failure {
        Failure {
            code: e.code(),
            error: e.into(),
        }
    }
}

/// Runs one parsed command line.
pub fn run(cli: cli::Cli) -> Result<(), Failure> {
    match cli.command {
        cli::Command::Run(args) => {
            run_cmd::run(&args, &std::env::args().collect::<Vec<_>>()).map(|_| ())
        }
        cli::Command::Workload(cmd) => workload_cmd::run(&cmd),
        cli::Command::Report(args) => report_cmd::run(&args),
        cli::Command::Compare(args) => report_cmd::compare(&args),
        cli::Command::Proxy(args) => proxy_cmd::run(&args),
        cli::Command::Msl(args) => msl_cmd::run(&args),
        cli::Command::Lineup(args) => lineup_cmd::run(&args),
        cli::Command::Replay(args) => {
            replay_cmd::run(&args, &std::env::args().collect::<Vec<_>>()).map(|_| ())
        }
        cli::Command::Trace(args) => replay_cmd::write_sample(&args),
        cli::Command::Curve(args) => curve_cmd::run(&args),
        cli::Command::Ab(args) => ab_cmd::run(&args).map(|_| ()),
        cli::Command::Peak(args) => {
            peak_cmd::run(&args, &std::env::args().collect::<Vec<_>>()).map(|_| ())
        }
        cli::Command::Agent(args) => agent_cmd::run(&args),
        cli::Command::Conform(args) => conform_cmd::run(&args),
        cli::Command::Tls { dir } => tls_cmd::tls_init(&dir),
        cli::Command::Multiplier(args) => {
            multiplier_cmd::run(&args, &std::env::args().collect::<Vec<_>>()).map(|_| ())
        }
    }
}
