//! The real products, one binary (docs/testing.md): their docs, and
//! (ignored) each product started, checked, power-cut and stopped, and
//! SPE through them.

mod support;

mod docs;
mod products;
mod spe;
