use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cacheoff::cli::Cli::parse();
    match cacheoff::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cacheoff: {:#}", e.error);
            ExitCode::from(e.code)
        }
    }
}
