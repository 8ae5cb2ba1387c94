//! Every fault of `cacheoff proxy --fault` is caught as exactly its error
//! kind, the robots keep their schedule, and the run ends with a report.
//! Robots -> the reference proxy with one fault -> origin servers,
//! in-process on port 0.

use crate::support;

use cacheoff_agent::StopHandle;
use cacheoff_base::Dur;
use cacheoff_proxy::{Fault, Faults};
use cacheoff_workload::{RequestMix, Workload};
use support::proxy;
use support::run::{assert_every_planned_request_ended, changing, phase, planned_on, run_into};

fn simple() -> Workload {
    let mut w = support::run::simple(400.0, 40, 8, 1.0, 4.0);
    // Faults that stall a reply end in a timeout; keep them short, each
    // below the whole transaction's so that the first to strike names it,
    // yet seconds long: an honest reply on a busy machine is never late
    // enough to be taken for a fault. (A dripping reply sends a byte every
    // 50 ms, far inside the idle timeout.)
    w.timeouts.first_byte = Dur::secs(2.5);
    w.timeouts.idle = Dur::secs(1.5);
    w.timeouts.xact = Dur::secs(5.0);
    w
}

/// Runs `w` through the reference proxy with `fault` striking `share` of
/// the requests it applies to; asserts that the only errors are `kind`.
fn caught_as(fault: Fault, share: f64, w: Workload, kind: &str) {
    let proxy = proxy::start(|c| {
        c.workers = 1;
        c.faults = Faults::new(vec![(fault, share)]);
    });
    let dir = tempfile::tempdir().unwrap();
    let plan = planned_on(&w, 1);
    let r = run_into(dir.path(), w, Some(proxy.addr()), 1, &StopHandle::new());
    let t = &r.summary.total;
    let name = fault.name();
    // Every planned request was sent and ended, as a reply or an error.
    assert_every_planned_request_ended(&plan, t);
    assert!(
        t.errors.by_kind.get(kind).copied().unwrap_or(0) > 0,
        "{name}: no {kind} among {:?}",
        t.errors.by_kind
    );
    assert_eq!(
        t.errors.by_kind.len(),
        1,
        "{name}: other kinds too: {:?}",
        t.errors.by_kind
    );
    // The robots kept their plan while the proxy misbehaved. A pacer stuck
    // behind a bad reply (seconds of timeout, several a second) would issue
    // every request late (more than 10 ms); a busy machine makes some late
    // however well the pacer does: 1.7% with two of these runs on 2 cores,
    // 52% beside CI's three other test streams.
    let meas = phase(&r.summary, "meas");
    assert!(
        meas.issued_late_percent < 90.0,
        "{name}: {}% issued late",
        meas.issued_late_percent
    );
    let report = cacheoff_report::write_page(dir.path()).unwrap();
    assert!(
        std::fs::read_to_string(report).unwrap().contains(kind),
        "{name}"
    );
}

fn with_requests(mix: RequestMix) -> Workload {
    let mut w = simple();
    w.requests = mix;
    w
}

#[test]
fn a_reset_mid_body_is_conn_reset() {
    caught_as(Fault::Reset, 0.1, simple(), "conn_reset");
}

#[test]
fn a_close_mid_body_is_premature_close() {
    caught_as(Fault::Close, 0.1, simple(), "premature_close");
}

#[test]
fn a_short_reply_is_length_mismatch() {
    caught_as(Fault::Truncate, 0.1, simple(), "length_mismatch");
}

#[test]
fn garbage_is_bad_response() {
    caught_as(Fault::Garbage, 0.02, simple(), "bad_response");
}

#[test]
fn a_dripping_reply_is_xact_timeout() {
    caught_as(Fault::Drip, 0.02, simple(), "xact_timeout");
}

#[test]
fn a_dropped_request_is_first_byte_timeout() {
    caught_as(Fault::Drop, 0.02, simple(), "first_byte_timeout");
}

#[test]
fn a_stalled_reply_is_idle_timeout() {
    caught_as(Fault::Stall, 0.02, simple(), "idle_timeout");
}

#[test]
fn an_empty_hit_is_no_body() {
    caught_as(Fault::EmptyBody, 0.1, simple(), "no_body");
}

#[test]
fn a_body_after_a_304_or_head_is_unwanted_body() {
    let mix = RequestMix {
        basic: 0.8,
        ims304: 0.1,
        head: 0.1,
        ..RequestMix::basic_only()
    };
    caught_as(
        Fault::BodilessBody,
        0.1,
        with_requests(mix),
        "unwanted_body",
    );
}

#[test]
fn a_wrong_content_md5_is_md5_mismatch() {
    caught_as(Fault::BadMd5, 0.1, simple(), "md5_mismatch");
}

#[test]
fn a_huge_header_is_head_too_large() {
    caught_as(Fault::HugeHeader, 0.02, simple(), "head_too_large");
}

#[test]
fn a_flipped_byte_is_body_mismatch() {
    caught_as(Fault::FlipByte, 0.1, simple(), "body_mismatch");
}

#[test]
fn another_objects_bytes_are_body_mismatch() {
    caught_as(Fault::WrongObject, 0.1, simple(), "body_mismatch");
}

#[test]
fn a_stale_copy_is_stale_content() {
    // Objects change every few seconds; the proxy never revalidates.
    let mut w = simple();
    changing(&mut w, 3.0, 1.0);
    caught_as(Fault::Stale, 1.0, w, "stale_content");
}

#[test]
fn a_stale_copy_without_last_modified_is_stale_content_by_its_expires() {
    // Nothing to compare but the copy's Expires date.
    let mut w = simple();
    changing(&mut w, 3.0, 0.0);
    caught_as(Fault::Stale, 1.0, w, "stale_content");
}

#[test]
fn answering_ims_by_expires_is_false_304() {
    let mix = RequestMix {
        basic: 0.7,
        ims200: 0.15,
        ims304: 0.15,
        ..RequestMix::basic_only()
    };
    caught_as(Fault::ImsByExpires, 1.0, with_requests(mix), "false_304");
}

#[test]
fn caching_uncachable_replies_is_uncachable_hit() {
    caught_as(Fault::CacheUncachable, 1.0, simple(), "uncachable_hit");
}

#[test]
fn serving_reloads_from_the_store_is_reload_hit() {
    let mix = RequestMix {
        basic: 0.8,
        reload: 0.2,
        ..RequestMix::basic_only()
    };
    caught_as(Fault::ReloadHit, 1.0, with_requests(mix), "reload_hit");
}

#[test]
fn answering_ims_hits_with_the_whole_reply_is_http_status() {
    // IMS requests the origin would answer 304 get the stored 200.
    let mix = RequestMix {
        basic: 0.8,
        ims304: 0.2,
        ..RequestMix::basic_only()
    };
    caught_as(Fault::IgnoreIms, 1.0, with_requests(mix), "http_status");
}

#[test]
fn keeping_a_copy_after_a_post_is_false_hit() {
    // Most requests revisit, so POSTed URLs are asked for again.
    let mut w = with_requests(RequestMix {
        basic: 0.9,
        post: 0.1,
        ..RequestMix::basic_only()
    });
    w.popularity.recurrence = 0.9;
    caught_as(Fault::KeepAfterPost, 1.0, w, "false_hit");
}

#[test]
fn a_reply_without_its_echo_is_foreign_source() {
    caught_as(Fault::StripEcho, 0.1, simple(), "foreign_source");
}

#[test]
fn every_fault_has_a_test() {
    let tests: String = include_str!("faults.rs")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for f in Fault::ALL {
        // A false claim is no error: tests/claims.rs catches it in the
        // claim counts.
        // A slow hit is no error: tests/ab.rs measures it.
        if matches!(*f, Fault::ClaimHit | Fault::SlowHit) {
            continue;
        }
        let call = format!("caught_as(Fault::{f:?},");
        assert!(tests.contains(&call), "no test runs the {} fault", f.name());
    }
}
