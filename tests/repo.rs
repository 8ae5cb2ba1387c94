//! The repository against itself (docs/testing.md): the map
//! (docs/architecture.md) against the code, and the docs against what the
//! code defines.

mod support;

mod architecture;
mod docs;
