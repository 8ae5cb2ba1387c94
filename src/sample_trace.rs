//! Sample traces from a workload's plan (`cacheoff trace`): the requests
//! one worker's robots would send, in time order, written as a trace, so
//! the repo makes its own traces instead of downloading any.

use cacheoff_base::RequestType;
use cacheoff_trace::sample::SampleRecord;
use cacheoff_trace::Method;
use cacheoff_workload::{ObjectSpace, Plan, Planned, Workload};
use std::time::Duration;

/// Arrival rate of a closed-loop workload's trace, which has no rate.
const CLOSED_LOOP_RATE: f64 = 100.0;

/// The first `n` requests of `w`'s plan (pages followed by their
/// embedded objects) as trace records. Uncachable objects are written as
/// `302` replies (not cachable by default) and, for formats without URLs,
/// under an id of their own per request, so a replay treats them as the
/// workload does.
pub fn from_plan(w: &Workload, n: usize) -> Vec<SampleRecord> {
    let mut w = w.clone();
    if w.peak_rate.is_none() {
        w.peak_rate = Some(cacheoff_base::Rate(CLOSED_LOOP_RATE));
    }
    let objects = ObjectSpace::new(w.seed, &w.content);
    let mut plan = Plan::new(&w, &objects, 0, 1);
    let Some(mut arrivals) = plan.arrivals() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let Some(t_ns) = arrivals.peek_ns() else {
            break;
        };
        let sched_s = t_ns as f64 / 1e9;
        let Some(robot) = arrivals.pop(plan.schedule().factors_at(sched_s)) else {
            continue;
        };
        let client = plan.robots()[robot];
        let page = plan.request(robot, sched_s);
        let embedded: Vec<Planned> = plan.embedded(&page).collect();
        let time_us = Duration::from_nanos(t_ns).as_micros() as u64;
        for p in std::iter::once(page).chain(embedded) {
            if out.len() == n {
                break;
            }
            let seq = out.len() as u64;
            out.push(record(&w, &objects, &p, time_us, client, seq));
        }
    }
    out
}

fn record(
    w: &Workload,
    objects: &ObjectSpace,
    p: &Planned,
    time_us: u64,
    client: u32,
    seq: u64,
) -> SampleRecord {
    let mut path = String::new();
    objects.write_path(&mut path, &p.info);
    let method = match p.rtype {
        RequestType::Post => Method::Post,
        RequestType::Head => Method::Head,
        _ => Method::Get,
    };
    let client_ip = std::net::Ipv4Addr::from(u32::from(w.robots.first_ip) + client);
    SampleRecord {
        time_us,
        id: if p.info.cachable {
            p.info.oid
        } else {
            cacheoff_base::rng::mix2(p.info.oid, seq)
        },
        host: cacheoff_workload::server_name(p.info.server as usize),
        path,
        client: client_ip.to_string(),
        size: p.info.size,
        ttfb_us: 0,
        method,
        status: if p.info.cachable { 200 } else { 302 },
    }
}
