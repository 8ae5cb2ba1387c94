//! `cacheoff conform`'s arguments (the command is `conform_cmd`).

use clap::Args;

/// `cacheoff conform`'s arguments.
#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("under_test").required(true).args(["proxy", "reverse"])),
    after_help = "Exit status: 0 no check failed, 1 a check failed, 2 cannot run (nothing answering, the origin address taken)."
)]
pub struct ConformArgs {
    /// A forward proxy under test: requests name the suite's origin in
    /// absolute form.
    #[arg(long, value_name = "HOST:PORT")]
    pub proxy: Option<String>,
    /// A surrogate (reverse proxy) under test, configured to fetch from
    /// --origin: requests carry that origin's Host.
    #[arg(long, value_name = "HOST:PORT")]
    pub reverse: Option<String>,
    /// Where the suite's origin listens. Default: 127.0.0.1:18080 with
    /// --reverse (where the surrogate must route), a free loopback port
    /// with --proxy.
    #[arg(long, value_name = "HOST:PORT")]
    pub origin: Option<String>,
    /// The origin's name in the surrogate's configuration, sent as Host
    /// with --reverse (default: the --origin address).
    #[arg(long, value_name = "NAME", requires = "reverse")]
    pub host: Option<String>,
    /// Print one JSON object (checks with id, section, result and the
    /// exchange; passed, failed) instead of the table.
    #[arg(long)]
    pub json: bool,
}
