//! The real products and a real browser (docs/testing.md): lineups of
//! Squid, Varnish, nginx, Traffic Server and h2o from Debian, Squid as the
//! proxy under test, and the report pages and the Multiplier in Chromium.
//! Ignored by a plain `cargo test`; `.ci/run` installs them and runs them.

mod support;

mod browser;
mod lineup;
mod spe_browser;
mod squid;
