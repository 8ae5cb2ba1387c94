//! One worker: a thread with a single-threaded runtime running a share of
//! the robots and origin servers, handing its stats to the coordinator at
//! every interval boundary of the [`Timeline`](crate::timeline::Timeline).

use crate::local::{Clients, Local};
use crate::merge::{WorkerInterval, WorkerMsg};
use crate::robot::{self, Robot};
use crate::server;
use crate::shared::Shared;
use cacheoff_stats::ErrorKind;
use cacheoff_workload::Plan;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What a worker gets from the coordinator.
pub struct WorkerSetup {
    /// Its index in the whole run: which robots its plan has.
    pub id: u32,
    /// Its place among this host's workers (the merger's part).
    pub slot: u32,
    /// Whether it runs robots (a host may run only origin servers).
    pub robots: bool,
    pub shared: Arc<Shared>,
    /// Origin servers this worker runs: (server index, whether it is the
    /// server's own worker rather than one sharing its socket, listener).
    pub listeners: Vec<(u32, bool, std::net::TcpListener)>,
    pub to_coord: Sender<WorkerMsg>,
    /// Set to stop the run early.
    pub stop: watch::Receiver<bool>,
    /// Set when every worker is done (servers keep serving until then).
    pub shutdown: watch::Receiver<bool>,
}

pub fn run_worker(setup: WorkerSetup) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, worker_main(setup))
}

async fn worker_main(setup: WorkerSetup) -> std::io::Result<()> {
    let WorkerSetup {
        id,
        slot,
        robots: runs_robots,
        shared,
        listeners,
        to_coord,
        mut stop,
        mut shutdown,
    } = setup;
    let local = Rc::new(Local::new(id, runs_robots, shared.clone()));
    for (idx, own, l) in listeners {
        let l = tokio::net::TcpListener::from_std(l)?;
        tokio::task::spawn_local(server::serve(local.clone(), idx, own, l));
    }
    // A worker past the run's last plans no robots.
    let plan_id = if runs_robots { id } else { u32::MAX };
    let plan = Plan::new(
        &shared.workload,
        &shared.objects,
        plan_id,
        shared.workers as u32,
    );
    let clients = Rc::new(Clients::new(local.clone(), plan));
    let robots: Vec<Rc<Robot>> = clients
        .plan
        .borrow()
        .robots()
        .iter()
        .enumerate()
        .map(|(i, &r)| Rc::new(Robot::new(&clients, i, r)))
        .collect();
    // The pacer runs inside this task rather than as a task of its own:
    // the worker's task set polls it between every batch of the others,
    // so a request is due no later than one batch after its time even
    // when the queue of woken connections is long.
    let robots_clients = clients.clone();
    let feed = shared.trace.clone();
    let robots = async move {
        match feed {
            // A replayed trace instead of the plan's arrivals.
            Some(feed) => robot::replay::replay(robots_clients, robots, &feed).await,
            None => robot::start(robots_clients, robots).await,
        }
    };
    let mut robots = std::pin::pin!(robots);
    let mut robots_done = false;

    // Interval ticks: hand over the stats at each boundary.
    let timeline = &shared.timeline;
    let count = timeline.intervals().len() as u32;
    let mut k = 0;
    while k < count {
        let iv = timeline.interval(k);
        let end_real = timeline.real_s(iv.end_s);
        let due = tokio::time::Instant::from_std(shared.start + Duration::from_secs_f64(end_real));
        let mut interrupted = false;
        let mut tick = false;
        while !tick && !interrupted {
            tokio::select! {
                _ = tokio::time::sleep_until(due) => { tick = true; }
                Ok(_) = stop.wait_for(|s| *s) => { interrupted = true; }
                _ = &mut robots, if !robots_done => { robots_done = true; }
            }
        }
        if interrupted || k + 1 == count {
            let end_s = timeline.schedule_s(shared.secs_at(Instant::now()).min(end_real));
            // The gauge before robots stop and close their connections.
            let open = clients.open_conns.get();
            if interrupted {
                clients.stopping.set(true);
            } else if !robots_done {
                // The pacer ends by itself after the plan's last arrival;
                // none is cut off by this tick firing a moment early.
                (&mut robots).await;
            }
            drain(&clients).await;
            send(&clients, &to_coord, slot, iv.index, end_s, open, true);
            break;
        }
        send(
            &clients,
            &to_coord,
            slot,
            iv.index,
            iv.end_s,
            clients.open_conns.get(),
            false,
        );
        k = timeline.next_interval(k);
    }
    // Keep serving other workers' robots until everyone is done.
    let _ = shutdown.wait_for(|s| *s).await;
    Ok(())
}

/// Waits up to `timeouts.drain` for transactions in flight; those still
/// unfinished then, and requests still waiting for a connection, are
/// counted as such (and abandoned), so every issued request ends somewhere.
async fn drain(clients: &Clients) {
    let deadline = tokio::time::Instant::now() + clients.shared().workload.timeouts.drain.0;
    clients.drained_by(deadline).await;
    for _ in 0..clients.in_flight() + clients.waiting.get() {
        clients.error(ErrorKind::Unfinished);
    }
}

fn send(
    clients: &Clients,
    to: &Sender<WorkerMsg>,
    slot: u32,
    index: u32,
    end_s: f64,
    open: u64,
    last: bool,
) {
    let snap = {
        let mut s = clients.local.stats.borrow_mut();
        s.counters.conns_open = open;
        // A host's server-only worker is not one of the run's workers.
        s.counters.ws_full =
            u64::from(clients.local.runs_robots && clients.plan.borrow().working_sets_full());
        let out = s.clone();
        s.reset();
        out
    };
    let _ = to.send(WorkerMsg::Interval(WorkerInterval {
        part: slot,
        worker: clients.local.id,
        index,
        end_s,
        snap: Box::new(snap),
        last: last.then(|| clients.digest.get()),
    }));
}
