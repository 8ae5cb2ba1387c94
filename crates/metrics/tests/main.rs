//! `/metrics` end to end, one binary (docs/testing.md): the exposition
//! formats, and slow or hostile scrapers.

mod exposition;
mod slow_clients;
