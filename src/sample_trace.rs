//! Sample traces from a workload's plan (`cacheoff trace`): the requests
//! one worker's robots would send, in time order, written as a trace, so
//! the repo makes its own traces instead of downloading any.

use cacheoff_base::{Dur, RequestType};
use cacheoff_trace::sample::SampleRecord;
use cacheoff_trace::Method;
use cacheoff_workload::{ArrivalTimes, ObjectSpace, Plan, Planned, Workload};
use std::collections::VecDeque;
use std::time::Duration;

/// Arrival rate of a closed-loop workload's trace, which has no rate.
const CLOSED_LOOP_RATE: f64 = 100.0;

/// Times a plan too short for the trace asked is lengthened before
/// giving up (each time by what the last walk says it lacks).
const LENGTHENINGS: usize = 8;

/// `w` as a trace of `n` requests walks it: with a rate if it has none,
/// and its measured phase (the last one marked, else the last) long enough
/// that the plan holds `n` requests; or the most the plan gives, when its
/// measured phase issues nothing to lengthen.
pub fn fit(w: &Workload, n: usize) -> Result<Workload, usize> {
    let mut w = w.clone();
    if w.peak_rate.is_none() {
        w.peak_rate = Some(cacheoff_base::Rate(CLOSED_LOOP_RATE));
    }
    let Some(measured) = w
        .phases
        .iter()
        .rposition(|p| p.measured)
        .or(w.phases.len().checked_sub(1))
    else {
        return Err(0);
    };
    let mut held = 0;
    for _ in 0..LENGTHENINGS {
        let mut per_phase = vec![0usize; w.phases.len()];
        let mut walk = PlanTrace::new(&w, n);
        held = 0;
        while let Some((phase, count)) = walk.next_page_counted() {
            per_phase[phase] += count;
            held += count;
        }
        if held >= n {
            return Ok(w);
        }
        // More of the measured kind: its requests a second, for what is
        // missing, a tenth more.
        let issued = per_phase[measured];
        let secs = w.phases[measured].duration.0.as_secs_f64();
        if issued == 0 || secs <= 0.0 {
            return Err(held);
        }
        let more = secs * (n - held) as f64 / issued as f64 * 1.1 + 1.0;
        w.phases[measured].duration = Dur::secs(secs + more);
    }
    Err(held)
}

/// The first requests (at most `n`) of `w`'s plan in time order, pages
/// followed by their embedded objects, as trace records; it ends where
/// the plan does ([`fit`] makes a plan long enough). Uncachable objects
/// are written as `302` replies (not cachable by default) and, for
/// formats without URLs, under an id of their own per request, so a
/// replay treats them as the workload does.
pub struct PlanTrace {
    w: Workload,
    objects: ObjectSpace,
    plan: Plan,
    arrivals: Option<ArrivalTimes>,
    ready: VecDeque<SampleRecord>,
    left: usize,
    /// Records made so far: an uncachable request's own id.
    made: u64,
}

impl PlanTrace {
    pub fn new(w: &Workload, n: usize) -> PlanTrace {
        let objects = ObjectSpace::new(w.seed, &w.content);
        let plan = Plan::new(w, &objects, 0, 1);
        let arrivals = plan.arrivals();
        PlanTrace {
            w: w.clone(),
            objects,
            plan,
            arrivals,
            ready: VecDeque::new(),
            left: n,
            made: 0,
        }
    }

    /// The next page and its embedded objects: the phase it falls in and
    /// how many requests they are (at most what is left); None at the
    /// plan's end or once `n` are out.
    fn next_page(&mut self) -> Option<(usize, u64, u32, Vec<Planned>)> {
        let arrivals = self.arrivals.as_mut()?;
        while self.left > 0 {
            let t_ns = arrivals.peek_ns()?;
            let sched_s = t_ns as f64 / 1e9;
            // Past the schedule's end nothing is accepted any more.
            let phase = self.plan.schedule().phase_at(sched_s)?;
            let Some(robot) = arrivals.pop(self.plan.schedule().factors_at(sched_s)) else {
                continue;
            };
            let client = self.plan.robots()[robot];
            let page = self.plan.request(robot, sched_s);
            let mut all = vec![page];
            all.extend(self.plan.embedded(&page));
            all.truncate(self.left);
            self.left -= all.len();
            let time_us = Duration::from_nanos(t_ns).as_micros() as u64;
            return Some((phase, time_us, client, all));
        }
        None
    }

    fn next_page_counted(&mut self) -> Option<(usize, usize)> {
        self.next_page()
            .map(|(phase, _, _, all)| (phase, all.len()))
    }
}

impl Iterator for PlanTrace {
    type Item = SampleRecord;
    fn next(&mut self) -> Option<SampleRecord> {
        if self.ready.is_empty() {
            let (_, time_us, client, all) = self.next_page()?;
            for p in all {
                let r = record(&self.w, &self.objects, &p, time_us, client, self.made);
                self.made += 1;
                self.ready.push_back(r);
            }
        }
        self.ready.pop_front()
    }
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
