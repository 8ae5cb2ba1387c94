//! libCacheSim's oracleGeneral records: `u32 time (s), u64 object id, u32
//! size, i64 next access vtime (-1: none)`, 24 bytes little-endian.

use std::io::{self, Read};

use crate::text::record;
use crate::{Record, NEVER};

pub(crate) const RECORD: usize = 24;

/// Reads the next whole record into `buf`: `Ok(None)` at the end, an error
/// naming how many bytes a cut last record has.
pub(crate) fn read_one(
    r: &mut impl Read,
    buf: &mut [u8; RECORD],
) -> io::Result<Option<Result<Record, String>>> {
    let mut got = 0;
    while got < RECORD {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    match got {
        0 => Ok(None),
        RECORD => Ok(Some(Ok(parse(buf)))),
        n => Ok(Some(Err(format!(
            "the trace ends within a record: {n} of {RECORD} bytes"
        )))),
    }
}

fn parse(b: &[u8; RECORD]) -> Record {
    let t = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let id = u64::from_le_bytes(b[4..12].try_into().unwrap());
    let size = u32::from_le_bytes(b[12..16].try_into().unwrap());
    let next = i64::from_le_bytes(b[16..24].try_into().unwrap());
    let mut r = record(u64::from(t) * 1_000_000, id, u64::from(size));
    r.next_access_vtime = Some(match next {
        n if n < 0 || n == i64::MAX => NEVER,
        n => n as u64,
    });
    r
}

/// One record's bytes (for the sample writer and tests).
pub(crate) fn encode(time_s: u32, id: u64, size: u32, next: Option<u64>) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    b[0..4].copy_from_slice(&time_s.to_le_bytes());
    b[4..12].copy_from_slice(&id.to_le_bytes());
    b[12..16].copy_from_slice(&size.to_le_bytes());
    let next = next.map_or(-1, |n| i64::try_from(n).unwrap_or(-1));
    b[16..24].copy_from_slice(&next.to_le_bytes());
    b
}
