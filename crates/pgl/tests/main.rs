//! `.pg` files read end to end, one binary (docs/testing.md): imports of
//! Web Polygraph's own files, and files as an attacker would write them.

mod import;
mod safety;
