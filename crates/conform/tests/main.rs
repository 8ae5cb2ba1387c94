//! The conformance suite's integration tests, one binary (docs/testing.md):
//! the suite against faulty proxies, against the reference proxy, and
//! (ignored) against the real products.

mod faults;
mod products;
mod reference;
