//! Robots: the client side of a worker.
//!
//! The [`pacer`] hands out the plan's arrivals on time; each becomes a
//! [`Due`] request that [`dispatch`] gives to an idle connection, a new
//! one, or the robot's bounded backlog. A *driver* task holds one
//! connection slot ([`conns`]) and runs [`exchange`]s back to back while
//! the robot has work; the [`verdict`] judges each reply and its
//! [`claim`]s are held against that verdict; the result is counted
//! ([`finish`]). The number of drivers plus idle connections never
//! exceeds the robot's `max_conns`.

mod claim;
mod conns;
mod exchange;
mod h2;
mod pacer;
pub mod replay;
mod verdict;

use crate::local::Clients;
use crate::shared::Via;
use cacheoff_base::rng::{stream, Stream};
use cacheoff_base::RequestType;
use cacheoff_stats::{ErrorKind, Outcome, XactRecord};
use cacheoff_workload::Planned;
use conns::{Conn, Pool, Target};
use exchange::{us_since, Begun, Due, Reply, Unsuccessful};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

pub struct Robot {
    /// Index into this worker's plan's robots.
    idx: usize,
    conns: Pool,
    /// Due requests waiting for a connection slot.
    backlog: RefCell<VecDeque<Due>>,
}

impl Robot {
    /// Robot `id`, the `idx`-th of this worker's plan.
    pub fn new(clients: &Clients, idx: usize, id: u32) -> Robot {
        let shared = clients.shared();
        Robot {
            idx,
            conns: Pool::new(
                shared.robot_ip(id),
                stream(shared.workload.seed, Stream::Conns(id)),
            ),
            backlog: RefCell::new(VecDeque::new()),
        }
    }
}

/// Starts every robot of this worker: open-loop from the plan, or
/// closed-loop (best effort) when the workload has no rate.
pub async fn start(clients: Rc<Clients>, robots: Vec<Rc<Robot>>) {
    let arrivals = clients.plan.borrow().arrivals();
    let Some(mut arrivals) = arrivals else {
        for r in &robots {
            for _ in 0..clients.shared().workload.robots.max_conns {
                tokio::task::spawn_local(closed_loop(clients.clone(), r.clone()));
            }
        }
        return;
    };
    let shared = clients.local.shared.clone();
    let stopping = || clients.stopping.get();
    pacer::pace(
        &mut arrivals,
        shared.start,
        &shared.timeline,
        &stopping,
        |robot, intended| {
            clients
                .local
                .stats
                .borrow_mut()
                .record_issue(us_since(intended, Instant::now()));
            let due = plan(&clients, &robots[robot], intended);
            record_in_digest(&clients, &robots[robot], &due);
            dispatch(&clients, &robots[robot], due);
        },
    )
    .await;
}

/// The plan's next request of `robot`, due at `intended`.
fn plan(clients: &Clients, robot: &Robot, intended: Instant) -> Due {
    let sched_s = clients.shared().schedule_s_at(intended);
    let plan = clients.plan.borrow_mut().request(robot.idx, sched_s);
    Due { plan, intended }
}

/// Adds an open-loop request to the plan digest. (Closed-loop requests
/// follow the replies' timing, so they have no plan to repeat.)
fn record_in_digest(clients: &Clients, robot: &Robot, due: &Due) {
    let t_ns = due
        .intended
        .saturating_duration_since(clients.shared().start)
        .as_nanos() as u64;
    let mut digest = clients.digest.get();
    digest.add(t_ns, clients.plan.borrow().robots()[robot.idx], &due.plan);
    clients.digest.set(digest);
}

/// Best effort: one request after another on one connection slot.
async fn closed_loop(clients: Rc<Clients>, robot: Rc<Robot>) {
    let shared = clients.local.shared.clone();
    let total_s = shared.timeline.schedule().total_s();
    tokio::time::sleep_until(tokio::time::Instant::from_std(shared.start)).await;
    robot.conns.drivers.set(robot.conns.drivers.get() + 1);
    let mut conn = None;
    while !clients.stopping.get() && shared.schedule_s_at(Instant::now()) < total_s {
        let due = plan(&clients, &robot, Instant::now());
        clients.xact_begun();
        conn = run_one(&clients, &robot, conn, due, None).await;
        clients.xact_done();
    }
    robot.conns.drivers.set(robot.conns.drivers.get() - 1);
}

/// The proxy's connections carry every server's requests, except HTTPS
/// through a forward proxy: a tunnel (and TLS session) per server.
fn target_of(clients: &Clients, due: &Due) -> Target {
    let shared = clients.shared();
    match shared.via {
        Via::Proxy(_) if shared.workload.robots.tls => Target::Server(due.plan.info.server),
        Via::Proxy(_) | Via::Surrogate(_) => Target::Proxy,
        Via::Direct => Target::Server(due.plan.info.server),
    }
}

/// Hands a due request to an idle connection, a new connection, or the
/// backlog.
fn dispatch(clients: &Rc<Clients>, robot: &Rc<Robot>, due: Due) {
    let w = &clients.shared().workload;
    let conn = robot
        .conns
        .take_idle(target_of(clients, &due), w.timeouts.keep_alive.0);
    let can_start = conn.is_some()
        || robot.conns.open() < w.robots.max_conns
        || robot.conns.close_oldest_idle();
    if can_start {
        clients.xact_begun();
        // Counted now, not when the task first runs: requests due in the
        // same tick must see this slot taken.
        robot.conns.drivers.set(robot.conns.drivers.get() + 1);
        // On an idle connection the request goes out now, not when the
        // task first runs behind every other woken one.
        let mut conn = conn;
        let begun = conn.as_mut().map(|c| exchange::begin(clients, c, &due));
        tokio::task::spawn_local(drive(clients.clone(), robot.clone(), conn, due, begun));
    } else if robot.backlog.borrow().len() < w.robots.backlog as usize {
        robot.backlog.borrow_mut().push_back(due);
        clients.waiting.set(clients.waiting.get() + 1);
    } else {
        clients.error(ErrorKind::BacklogOverflow);
    }
}

/// Runs transactions on one connection slot until the robot's backlog is
/// empty, the first one perhaps already begun on `conn`. The caller has
/// already counted the slot in `robot.drivers`.
async fn drive(
    clients: Rc<Clients>,
    robot: Rc<Robot>,
    conn: Option<Conn>,
    first: Due,
    begun: Option<Begun>,
) {
    let mut conn = conn;
    let mut next = Some(first);
    let mut begun = begun;
    while let Some(due) = next.take() {
        conn = run_one(&clients, &robot, conn, due, begun.take()).await;
        // Waiting requests are planned ones: they are sent while the run
        // drains too (the same plan gives the same transactions), unless
        // it was interrupted.
        let queued = if clients.stopping.get() {
            None
        } else {
            robot.backlog.borrow_mut().pop_front()
        };
        if queued.is_some() {
            clients.waiting.set(clients.waiting.get() - 1);
            // Count the next one before releasing this one, so a drain
            // never sees zero while work remains.
            clients.xact_begun();
        }
        clients.xact_done();
        next = queued;
    }
    if let Some(c) = conn {
        robot.conns.put_idle(c);
    }
    robot.conns.drivers.set(robot.conns.drivers.get() - 1);
}

/// A connection to the request's target: `conn` if it goes there, else a
/// matching idle one (keeping `conn` idle), else none (a new one is due).
fn conn_for(clients: &Clients, robot: &Robot, conn: Option<Conn>, target: Target) -> Option<Conn> {
    match conn {
        Some(c) if c.target == target => Some(c),
        other => {
            let keep_alive = clients.shared().workload.timeouts.keep_alive.0;
            let m = robot.conns.take_idle(target, keep_alive)?;
            if let Some(o) = other {
                robot.conns.put_idle(o);
            }
            Some(m)
        }
    }
}

/// One transaction on `conn` (or a new connection); returns the connection
/// if it may be reused. With `begun`, the request is already on `conn`.
async fn run_one(
    clients: &Rc<Clients>,
    robot: &Rc<Robot>,
    conn: Option<Conn>,
    due: Due,
    begun: Option<Begun>,
) -> Option<Conn> {
    let target = target_of(clients, &due);
    let (reused, mut conn, mut result) = match (conn, begun) {
        (Some(mut c), Some(b)) => {
            let r = exchange::complete(clients, &mut c, &due, b).await;
            (true, c, r)
        }
        (conn, _) => {
            let (reused, mut c) = match conn_for(clients, robot, conn, target) {
                Some(c) => (true, c),
                None => match robot
                    .conns
                    .connect(clients, target, due.plan.info.server)
                    .await
                {
                    Ok(c) => (false, c),
                    Err(kind) => {
                        clients.error(kind);
                        return None;
                    }
                },
            };
            let r = exchange::exchange(clients, &mut c, &due).await;
            (reused, c, r)
        }
    };
    if reused && matches!(result, Err(Unsuccessful::StaleConn)) {
        // A reused connection the peer had already closed: retry once on a
        // fresh one, as browsers do for idempotent requests. The Polygraph
        // clock restarts with that connect.
        drop(conn);
        conn = match robot
            .conns
            .connect(clients, target, due.plan.info.server)
            .await
        {
            Ok(c) => c,
            Err(kind) => {
                clients.error(kind);
                return None;
            }
        };
        result = exchange::exchange(clients, &mut conn, &due).await;
    }
    let page_arrived = page_arrived(&result);
    let conn = finish(clients, conn, &due, result);
    if page_arrived && due.plan.info.embeds > 0 && !clients.stopping.get() {
        fetch_embedded(clients, robot, &due);
    }
    conn
}

/// The browser has a page body to parse, so it goes on to the embedded
/// objects (a 304 or a HEAD brings none, as in Polygraph).
fn page_arrived(r: &Result<Reply, Unsuccessful>) -> bool {
    r.as_ref()
        .is_ok_and(|r| r.status == 200 && r.rtype != RequestType::Head)
}

/// The page's embedded objects, due now. A page that arrives while the
/// run drains at its end still brings them: they belong to the plan.
fn fetch_embedded(clients: &Rc<Clients>, robot: &Rc<Robot>, page: &Due) {
    let now = Instant::now();
    let embedded: Vec<Planned> = clients.plan.borrow().embedded(&page.plan).collect();
    for plan in embedded {
        dispatch(
            clients,
            robot,
            Due {
                plan,
                intended: now,
            },
        );
    }
}

/// Counts the transaction's result; the connection if it may be reused.
fn finish(
    clients: &Clients,
    conn: Conn,
    due: &Due,
    r: Result<Reply, Unsuccessful>,
) -> Option<Conn> {
    let info = &due.plan.info;
    match r {
        Ok(reply) => {
            let mut stats = clients.local.stats.borrow_mut();
            let done_s = clients.shared().secs_at(reply.done);
            stats.firsts.record(reply.outcome, done_s);
            stats.record_xact(&XactRecord {
                outcome: reply.outcome,
                fills_cache: reply.outcome == Outcome::Miss && reply.status == 200 && info.cachable,
                bytes: reply.bytes,
                full_body: reply.status == 200 && reply.rtype != RequestType::Head,
                rtype: reply.rtype,
                ctype: info.ctype,
                offered_hit: due.plan.offered_hit(),
                ideal_hit: due.plan.ideal_hit,
                rt_corrected_us: us_since(due.intended, reply.done),
                rt_polygraph_us: us_since(conn.held_since, reply.done),
            });
            claim::count(&mut stats.counters, &reply.claims, reply.outcome);
            drop(stats);
            conn.reuse(reply.keep_alive)
        }
        Err(Unsuccessful::Error(kind)) => {
            clients.error(kind);
            None
        }
        Err(Unsuccessful::StaleConn) => {
            clients.error(ErrorKind::PrematureClose);
            None
        }
        Err(Unsuccessful::Aborted { by_server }) => {
            clients.local.stats.borrow_mut().record_abort(by_server);
            None
        }
    }
}
