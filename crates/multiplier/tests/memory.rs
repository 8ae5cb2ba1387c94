//! Memory under large-bodied requests and a proxy under test that never
//! answers: the bytes queued copies hold stay within `max_queued_bytes`,
//! and the process grows by that budget plus a fixed overhead, not by
//! what clients send. In a process of its own (`alone!`), so the
//! process's RSS is this test's.

use crate::support;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use support::*;

const MB: u64 = 1 << 20;

#[test]
fn queued_copies_hold_at_most_their_byte_budget_whatever_clients_send() {
    if !cacheoff_testkit::alone!(queued_copies_hold_at_most_their_byte_budget_whatever_clients_send)
    {
        return;
    }
    let stage = Stage::new(Arc::default());
    let origin = stage.origin();
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(
        stage.collector(),
        &[
            ("silent", stage.fake(Fake::Stall)),
            ("honest", stage.fake(Fake::Honest)),
        ],
        tmp.path(),
    );
    const BUDGET: u64 = 8 * MB;
    cfg.max_queued_bytes = BUDGET;
    // The count limit and the deadline never bind here: the bytes do.
    cfg.queue = 8192;
    cfg.conns_per_proxy = 1;
    cfg.copy_timeout = Duration::from_secs(600);
    cfg.first_byte_timeout = Duration::from_secs(600);
    cfg.stop_grace = Duration::from_millis(100);
    let m = cacheoff_multiplier::start(cfg).unwrap();
    let body = vec![b'x'; MB as usize];
    let send = |path: &str| {
        let mut s = client(m.addr());
        write!(
            s.s,
            "GET http://{origin}{path} HTTP/1.1\r\nHost: {origin}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        s.write(&body);
        let r = s.reply(false);
        assert_eq!((r.status, r.body), (200, body_of(path)));
    };
    // Warm up every buffer and thread once, then measure.
    send("/warm");
    let before = rss();
    // 200 GETs with 1 MiB bodies from 4 clients at once: 200 MiB per
    // proxy if every copy were kept.
    const N: usize = 200;
    std::thread::scope(|scope| {
        for c in 0..4 {
            let send = &send;
            scope.spawn(move || {
                for i in (c..N).step_by(4) {
                    send(&format!("/big/{i}"));
                }
            });
        }
    });
    let grew = rss().saturating_sub(before);
    let held = m.queued_bytes();
    let peak = m.queued_bytes_peak();
    let uploads = m.buffered_uploads_peak();
    let summary = m.stop().unwrap();
    eprintln!(
        "rss +{:.1} MiB, copies hold {:.1} MiB (peak {:.1}), uploads peak {:.1} MiB",
        grew as f64 / MB as f64,
        held as f64 / MB as f64,
        peak as f64 / MB as f64,
        uploads as f64 / MB as f64
    );
    assert!(peak <= BUDGET, "{peak}");
    assert!(
        peak >= BUDGET / 2 - 2 * MB,
        "the silent proxy's share filled: {peak}"
    );
    // The budget, four requests being read and relayed (each buffered as
    // its body and the request sent on), the Collector's and the origin's
    // copies of them, and slack for the allocator: not the 200 MiB held
    // without the budget.
    let overhead = 64 * MB;
    assert!(grew <= BUDGET + overhead, "RSS grew {} MiB", grew / MB);
    let silent = summary.proxy("silent").unwrap();
    let c = silent.span.counts;
    assert_eq!(c.copied + c.dropped, N as u64 + 1, "{c:?}");
    // Its share (4 MiB) holds three or four 1 MiB requests at a time.
    assert!(c.copied <= 5, "{c:?}");
    assert!(silent.overloaded);
    let honest = summary.proxy("honest").unwrap().span.counts;
    assert_eq!(honest.copied + honest.dropped, N as u64 + 1, "{honest:?}");
    assert_eq!(honest.mismatches, 0, "{honest:?}");
    assert!(honest.completed > 0, "{honest:?}");
}
