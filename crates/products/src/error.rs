//! What can go wrong, always naming the product; failures to start carry
//! the tail of the product's own logs.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no built-in product {name:?} (there are: {known})")]
    UnknownProduct { name: String, known: String },
    #[error("{origin}: {message}")]
    Spec { origin: String, message: String },
    #[error("{product}: cannot run in {mode} mode ({why})")]
    Unsupported {
        product: String,
        mode: crate::Mode,
        why: String,
    },
    #[error("{product} is not installed: {binary} is missing{}", package.as_ref().map(|p| format!(" (Debian package {p}; ops/install-products.sh installs it)")).unwrap_or_default())]
    NotInstalled {
        product: String,
        binary: PathBuf,
        package: Option<String>,
    },
    #[error("{product}: {what}: {message}")]
    Setup {
        product: String,
        what: String,
        message: String,
    },
    #[error("{product}: cannot {what} ({}): {source}", path.display())]
    Io {
        product: String,
        what: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{product}: `{command}` failed: {status}{}", tail_text(tail))]
    Command {
        product: String,
        command: String,
        status: String,
        tail: String,
    },
    #[error("{product} exited while starting: {status}{}", tail_text(tail))]
    Exited {
        product: String,
        status: String,
        tail: String,
    },
    #[error(
        "{product} did not answer on {listen} within {waited:?}{}",
        tail_text(tail)
    )]
    NotReady {
        product: String,
        listen: std::net::SocketAddr,
        waited: Duration,
        tail: String,
    },
    #[error("{product}: {what}")]
    State { product: String, what: String },
}

fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("\n{tail}")
    }
}
