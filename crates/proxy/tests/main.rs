//! The reference proxy end to end, one binary (docs/testing.md): collapsed
//! forwarding, RFC 9111 section by section, hostile clients and origins,
//! scenarios, and slow readers.

mod script;

mod collapse;
mod conformance;
mod hostile;
mod scenario;
mod slow_readers;
