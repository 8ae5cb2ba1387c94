//! Robots: open-loop request pacing, connection management and the client
//! side of a transaction.
//!
//! Each robot owns its idle connections and a bounded backlog of due
//! requests. A *driver* task holds one connection slot and runs
//! transactions back to back while the robot has work; the number of
//! drivers plus idle connections never exceeds the robot's `max_conns`.
//! Latency is measured from each request's intended start, so a robot that
//! could not send on time still reports the wait (open-loop, as in wrk2).

use crate::shared::{unix_now, Shared};
use crate::worker::{WorkerCtx, IO_BUF};
use cacheoff_base::rng::{stream, Rng, SimRng, Stream};
use cacheoff_http::body::{self, BodyCheck};
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::date;
use cacheoff_http::echo::{echo_of, xact_of_echo};
use cacheoff_http::request::{write_request, RequestSpec};
use cacheoff_http::response::parse_response_within;
use cacheoff_http::{Framing, HttpError, ResponseHead};
use cacheoff_stats::{ErrorKind, Outcome, XactRecord};
use cacheoff_timer::PreciseTimer;
use cacheoff_workload::RequestType;
use cacheoff_workload::{embedded_oid, Arrivals, Factors, ObjectInfo, Workload};
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Head reads (and the body bytes that come with them).
const HEAD_CHUNK: usize = 4 * 1024;
/// Requests due sooner than this are waited for by yielding to other tasks
/// rather than by sleeping.
const SPIN_WINDOW: Duration = Duration::from_micros(50);

/// Where a connection goes: the proxy, or an origin server by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Proxy,
    Server(u32),
}

pub struct Robot {
    id: u32,
    /// The client host whose working set this robot uses.
    host: u32,
    ip: Ipv4Addr,
    rng: RefCell<SimRng>,
    idle: RefCell<Vec<Conn>>,
    drivers: Cell<u32>,
    backlog: RefCell<VecDeque<Planned>>,
}

impl Robot {
    pub fn new(shared: &Shared, id: u32) -> Robot {
        Robot {
            id,
            host: shared.wl.robots.host_of(id),
            ip: shared.robot_ip(id),
            rng: RefCell::new(stream(shared.wl.seed, Stream::Robot(id))),
            idle: RefCell::new(Vec::new()),
            drivers: Cell::new(0),
            backlog: RefCell::new(VecDeque::new()),
        }
    }

    fn open(&self) -> u32 {
        self.drivers.get() + self.idle.borrow().len() as u32
    }

    /// Takes a fresh idle connection to `target`, closing stale ones.
    fn take_idle(&self, target: Target, keep_alive: Duration) -> Option<Conn> {
        let mut idle = self.idle.borrow_mut();
        idle.retain(|c| c.idle_since.elapsed() < keep_alive);
        let i = idle.iter().position(|c| c.target == target)?;
        Some(idle.swap_remove(i))
    }
}

/// A request planned for an intended time.
struct Planned {
    info: ObjectInfo,
    intended: Instant,
    /// The object (or, for an embedded object, its page) was requested
    /// before.
    repeat: bool,
    offered_hit: bool,
    rtype: RequestType,
    /// Body bytes of a POST.
    post_len: u64,
}

struct Conn {
    stream: TcpStream,
    target: Target,
    uses: u32,
    limit: u32,
    idle_since: Instant,
    /// Request, then response head (and the body bytes read with it).
    buf: Vec<u8>,
    ctx: Rc<WorkerCtx>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.ctx.open_conns.set(self.ctx.open_conns.get() - 1);
    }
}

/// Starts every robot of this worker: open-loop from the plan, or
/// closed-loop (best effort) when the workload has no rate.
pub async fn start_robots(ctx: Rc<WorkerCtx>, robots: Vec<Rc<Robot>>) {
    match ctx.shared.wl.robot_rate() {
        // Embedded objects add to the planned requests; the plan makes up
        // the rest of the rate.
        Some(rate) => {
            let planned = rate * ctx.shared.wl.direct_share();
            pace(ctx, robots, planned).await
        }
        None => {
            for r in &robots {
                for _ in 0..ctx.shared.wl.robots.max_conns {
                    tokio::task::spawn_local(closed_loop(ctx.clone(), r.clone()));
                }
            }
        }
    }
}

/// Open-loop pacer: a Poisson stream per robot, thinned by the schedule's
/// load factor (exact for time-varying rates).
async fn pace(ctx: Rc<WorkerCtx>, robots: Vec<Rc<Robot>>, rate: f64) {
    let shared = ctx.shared.clone();
    let schedule = &shared.schedule;
    let max_load = schedule.max_load();
    let cand_rate = rate * max_load;
    if cand_rate <= 0.0 || robots.is_empty() {
        return;
    }
    let total_s = schedule.total_s();
    let constant = shared.wl.robots.arrivals == Arrivals::Constant;
    let gap_ns = |rng: &mut SimRng| -> u64 {
        if constant {
            return (1e9 / cand_rate) as u64;
        }
        let u: f64 = rng.gen();
        (-(1.0 - u).ln() / cand_rate * 1e9) as u64
    };
    let robot_count = f64::from(shared.wl.robots.count);
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::with_capacity(robots.len());
    for (i, r) in robots.iter().enumerate() {
        let mut rng = r.rng.borrow_mut();
        // Constant streams start at a random point of their first gap.
        let t = if constant {
            (rng.gen::<f64>() * 1e9 / cand_rate) as u64
        } else {
            gap_ns(&mut rng)
        };
        heap.push(Reverse((t, i)));
    }
    let start = shared.start;
    // Tokio's 1 ms timer is the fallback if a timerfd cannot be had.
    let mut timer = PreciseTimer::new().ok();
    let sched = |t_ns: u64| shared.schedule_s(t_ns as f64 / 1e9);
    while let Some(&Reverse((t, _))) = heap.peek() {
        if sched(t) >= total_s || ctx.stopping.get() {
            break;
        }
        let due = start + Duration::from_nanos(t);
        let now = Instant::now();
        if due > now && due - now <= SPIN_WINDOW {
            // Imminent: let other tasks run and look again, instead of a
            // sleep/wake-up cycle of the whole thread.
            tokio::task::yield_now().await;
            continue;
        }
        if due > now {
            match timer.as_mut() {
                Some(t) => {
                    if t.sleep_until(due).await.is_err() {
                        timer = None;
                    }
                }
                None => tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await,
            }
            if ctx.stopping.get() {
                break;
            }
        }
        let now_ns = Instant::now().saturating_duration_since(start).as_nanos() as u64;
        while let Some(&Reverse((t, i))) = heap.peek() {
            if t > now_ns || sched(t) >= total_s {
                break;
            }
            heap.pop();
            let robot = &robots[i];
            let accept = {
                let f = schedule.factors_at(sched(t));
                let mut rng = robot.rng.borrow_mut();
                let next = t + gap_ns(&mut rng).max(1);
                heap.push(Reverse((next, i)));
                f.is_some_and(|f| {
                    // Robots beyond the live population sit this one out.
                    f64::from(robot.id) < f.population * robot_count
                        && (f.load >= max_load || rng.gen::<f64>() * max_load < f.load)
                })
            };
            if accept {
                let intended = start + Duration::from_nanos(t);
                ctx.stats
                    .borrow_mut()
                    .record_issue(us_since(intended, Instant::now()));
                let p = plan(&ctx, robot, intended);
                dispatch(&ctx, robot, p);
            }
        }
    }
}

/// Best effort: one request after another on one connection slot.
async fn closed_loop(ctx: Rc<WorkerCtx>, robot: Rc<Robot>) {
    let shared = ctx.shared.clone();
    let total_s = shared.schedule.total_s();
    tokio::time::sleep_until(tokio::time::Instant::from_std(shared.start)).await;
    robot.drivers.set(robot.drivers.get() + 1);
    let mut conn = None;
    while !ctx.stopping.get() && shared.schedule_s(shared.secs_at(Instant::now())) < total_s {
        let p = plan(&ctx, &robot, Instant::now());
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        conn = run_one(&ctx, &robot, conn, p).await;
        ctx.xact_done();
    }
    robot.drivers.set(robot.drivers.get() - 1);
}

/// Chooses the object of a request due at `intended`.
fn plan(ctx: &WorkerCtx, robot: &Robot, intended: Instant) -> Planned {
    let wl = &ctx.shared.wl;
    let f = ctx
        .shared
        .schedule
        .factors_at(ctx.shared.schedule_s(ctx.shared.secs_at(intended)))
        .unwrap_or(Factors {
            load: 1.0,
            recurrence: 1.0,
            special: 1.0,
            population: 1.0,
        });
    let pick = {
        let mut rng = robot.rng.borrow_mut();
        let objects = &ctx.shared.objects;
        ctx.worlds[robot.host as usize].borrow_mut().pick(
            &mut *rng,
            (wl.popularity.recurrence * f.recurrence).clamp(0.0, 1.0),
            &wl.popularity,
            &|oid| {
                let o = objects.get(oid);
                o.cachable.then_some(o.size)
            },
        )
    };
    let info = ctx.shared.objects.get(pick.oid);
    let repeat = pick.repeat;
    let (rtype, post_len) = choose_request(wl, robot, f.special);
    let held = {
        let mut world = ctx.worlds[robot.host as usize].borrow_mut();
        if !repeat && rtype == RequestType::Head {
            // A browser that only asked for the page's head fetches none
            // of its images.
            for k in 1..=info.embeds {
                world.note_unfetched(embedded_oid(info.oid, k));
            }
        }
        world.note_request(info.oid, repeat, rtype)
    };
    Planned {
        info,
        intended,
        repeat,
        offered_hit: held && info.cachable,
        rtype,
        post_len,
    }
}

/// The request type of one transaction (and a POST's body length): the
/// workload's mix, with the phase's factor on the special requests (IMS
/// and reloads); basic requests fill the rest.
fn choose_request(wl: &Workload, robot: &Robot, special: f64) -> (RequestType, u64) {
    let mut rng = robot.rng.borrow_mut();
    let u: f64 = rng.gen();
    let mut shares = wl.requests.shares();
    for s in &mut shares[1..=3] {
        *s *= special;
    }
    shares[0] = (1.0 - shares[1..].iter().sum::<f64>()).max(0.0);
    let mut acc = 0.0;
    let rtype = RequestType::ALL
        .iter()
        .zip(shares)
        .find(|(_, share)| {
            acc += share;
            u < acc
        })
        .map_or(RequestType::Basic, |(t, _)| *t);
    let post_len = if rtype == RequestType::Post {
        wl.requests.post_body.sample(&mut *rng) as u64
    } else {
        0
    };
    (rtype, post_len)
}

/// After a page arrived: its embedded objects, due now, as a cache-less
/// browser fetches them. Each is a transaction of its own and follows the
/// request-type mix like any other.
fn embedded_of<'a>(
    ctx: &'a WorkerCtx,
    robot: &'a Robot,
    page: &Planned,
) -> impl Iterator<Item = Planned> + 'a {
    let now = Instant::now();
    let special = ctx
        .shared
        .schedule
        .factors_at(ctx.shared.schedule_s(ctx.shared.secs_at(now)))
        .map_or(1.0, |f| f.special);
    let (repeat, oid) = (page.repeat, page.info.oid);
    (1..=page.info.embeds).map(move |k| {
        let info = ctx.shared.objects.get(embedded_oid(oid, k));
        let (rtype, post_len) = choose_request(&ctx.shared.wl, robot, special);
        let held = ctx.worlds[robot.host as usize]
            .borrow_mut()
            .note_request(info.oid, repeat, rtype);
        Planned {
            info,
            intended: now,
            repeat,
            offered_hit: held && info.cachable,
            rtype,
            post_len,
        }
    })
}

fn target_of(ctx: &WorkerCtx, p: &Planned) -> Target {
    if ctx.shared.proxy.is_some() {
        Target::Proxy
    } else {
        Target::Server(p.info.server)
    }
}

/// Hands a due request to an idle connection, a new connection, or the
/// backlog.
fn dispatch(ctx: &Rc<WorkerCtx>, robot: &Rc<Robot>, p: Planned) {
    let target = target_of(ctx, &p);
    let max = ctx.shared.wl.robots.max_conns;
    let conn = robot.take_idle(target, ctx.shared.wl.timeouts.keep_alive.0);
    let can_start = conn.is_some() || robot.open() < max || {
        // At the limit with only idle connections to other servers: close
        // the one idle longest, as a browser would.
        let mut idle = robot.idle.borrow_mut();
        !idle.is_empty() && {
            idle.remove(0);
            true
        }
    };
    if can_start {
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        // Counted now, not when the task first runs: requests due in the
        // same tick must see this slot taken.
        robot.drivers.set(robot.drivers.get() + 1);
        tokio::task::spawn_local(drive(ctx.clone(), robot.clone(), conn, p));
    } else if robot.backlog.borrow().len() < ctx.shared.wl.robots.backlog as usize {
        robot.backlog.borrow_mut().push_back(p);
    } else {
        ctx.error(ErrorKind::BacklogOverflow);
    }
}

/// Runs transactions on one connection slot until the robot's backlog is
/// empty. The caller has already counted the slot in `robot.drivers`.
async fn drive(ctx: Rc<WorkerCtx>, robot: Rc<Robot>, conn: Option<Conn>, first: Planned) {
    let mut conn = conn;
    let mut next = Some(first);
    while let Some(p) = next.take() {
        conn = run_one(&ctx, &robot, conn, p).await;
        // After the schedule ends, waiting requests are not sent.
        let queued = if ctx.stopping.get() {
            None
        } else {
            robot.backlog.borrow_mut().pop_front()
        };
        if queued.is_some() {
            // Count the next one before releasing this one, so a drain
            // never sees zero while work remains.
            ctx.in_flight.set(ctx.in_flight.get() + 1);
        }
        ctx.xact_done();
        next = queued;
    }
    if let Some(mut c) = conn {
        c.idle_since = Instant::now();
        robot.idle.borrow_mut().push(c);
    }
    robot.drivers.set(robot.drivers.get() - 1);
}

/// One transaction on `conn` (or a new connection); returns the connection
/// if it may be reused.
async fn run_one(
    ctx: &Rc<WorkerCtx>,
    robot: &Rc<Robot>,
    conn: Option<Conn>,
    p: Planned,
) -> Option<Conn> {
    let target = target_of(ctx, &p);
    let conn = match conn {
        Some(c) if c.target == target => Some(c),
        other => {
            // Swap with a matching idle connection if there is one;
            // otherwise close ours and open another.
            match robot.take_idle(target, ctx.shared.wl.timeouts.keep_alive.0) {
                Some(m) => {
                    if let Some(mut o) = other {
                        o.idle_since = Instant::now();
                        robot.idle.borrow_mut().push(o);
                    }
                    Some(m)
                }
                None => None,
            }
        }
    };
    let (reused, mut conn) = match conn {
        Some(c) => (true, c),
        None => match connect(ctx, robot, target).await {
            Ok(c) => (false, c),
            Err(kind) => {
                ctx.error(kind);
                return None;
            }
        },
    };
    let result = exchange(ctx, &mut conn, &p).await;
    match result {
        // A reused connection the peer had already closed: retry once on a
        // fresh one, as browsers do for idempotent requests.
        Err(Failure::StaleConn) if reused => {
            drop(conn);
            let mut fresh = match connect(ctx, robot, target).await {
                Ok(c) => c,
                Err(kind) => {
                    ctx.error(kind);
                    return None;
                }
            };
            let r = exchange(ctx, &mut fresh, &p).await;
            let page_ok = page_arrived(&r);
            let conn = finish(ctx, fresh, &p, r);
            fetch_embedded(ctx, robot, &p, page_ok);
            conn
        }
        r => {
            let page_ok = page_arrived(&r);
            let conn = finish(ctx, conn, &p, r);
            fetch_embedded(ctx, robot, &p, page_ok);
            conn
        }
    }
}

/// The browser has the page (a fresh body, or a 304 for the copy it
/// holds), so it goes on to the embedded objects.
fn page_arrived(r: &Result<Reply, Failure>) -> bool {
    r.as_ref()
        .is_ok_and(|r| (r.status == 200 && r.rtype != RequestType::Head) || r.status == 304)
}

fn fetch_embedded(ctx: &Rc<WorkerCtx>, robot: &Rc<Robot>, page: &Planned, page_ok: bool) {
    if page_ok && page.info.embeds > 0 && !ctx.stopping.get() {
        for e in embedded_of(ctx, robot, page) {
            dispatch(ctx, robot, e);
        }
    }
}

fn finish(ctx: &WorkerCtx, mut conn: Conn, p: &Planned, r: Result<Reply, Failure>) -> Option<Conn> {
    match r {
        Ok(reply) => {
            ctx.stats.borrow_mut().record_xact(&XactRecord {
                outcome: reply.outcome,
                fills_cache: reply.outcome == Outcome::Miss
                    && reply.status == 200
                    && p.info.cachable,
                bytes: reply.bytes,
                full_body: reply.status == 200 && reply.rtype != RequestType::Head,
                rtype: reply.rtype,
                ctype: p.info.ctype,
                offered_hit: p.offered_hit,
                rt_corrected_us: us_since(p.intended, reply.done),
                rt_uncorrected_us: us_since(reply.sent, reply.done),
            });
            conn.uses += 1;
            (reply.keep_alive && conn.uses < conn.limit).then_some(conn)
        }
        Err(Failure::Error(kind)) => {
            ctx.error(kind);
            None
        }
        Err(Failure::StaleConn) => {
            ctx.error(ErrorKind::PrematureClose);
            None
        }
        Err(Failure::Aborted(by_server)) => {
            ctx.stats.borrow_mut().record_abort(by_server);
            None
        }
    }
}

fn us_since(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

async fn connect(ctx: &Rc<WorkerCtx>, robot: &Robot, target: Target) -> Result<Conn, ErrorKind> {
    let shared = &ctx.shared;
    let addr: SocketAddr = match target {
        Target::Proxy => shared.proxy.expect("proxy target only with a proxy"),
        Target::Server(i) => shared.servers[i as usize],
    };
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .map_err(|_| ErrorKind::ConnectFailed)?;
    if addr.is_ipv4() {
        // Each robot sends from its own address; the port is chosen at
        // connect time, per destination, instead of reserving one per bind.
        set_bind_address_no_port(&socket);
        socket
            .bind(SocketAddr::new(robot.ip.into(), 0))
            .map_err(|_| ErrorKind::ConnectFailed)?;
    }
    let stream =
        match tokio::time::timeout(shared.wl.timeouts.connect.0, socket.connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(_)) => return Err(ErrorKind::ConnectFailed),
            Err(_) => return Err(ErrorKind::ConnectTimeout),
        };
    let _ = stream.set_nodelay(true);
    let limit = {
        let d = &shared.wl.robots.conn_reuse;
        (d.sample(&mut *robot.rng.borrow_mut()) as u32).max(1)
    };
    let mut s = ctx.stats.borrow_mut();
    s.counters.conns_opened += 1;
    ctx.open_conns.set(ctx.open_conns.get() + 1);
    Ok(Conn {
        stream,
        target,
        uses: 0,
        limit,
        idle_since: Instant::now(),
        buf: Vec::with_capacity(HEAD_CHUNK),
        ctx: ctx.clone(),
    })
}

fn set_bind_address_no_port(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: valid socket descriptor and option value; failure only loses
    // the optimisation.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

struct Reply {
    outcome: Outcome,
    /// The type actually sent (an IMS request for an object without
    /// `Last-Modified` goes out as basic).
    rtype: RequestType,
    status: u16,
    bytes: u64,
    keep_alive: bool,
    sent: Instant,
    done: Instant,
}

enum Failure {
    Error(ErrorKind),
    /// Aborted on purpose, by the robot or (`true`) by the server.
    Aborted(bool),
    /// The connection was closed before any response byte arrived.
    StaleConn,
}

impl From<ErrorKind> for Failure {
    fn from(k: ErrorKind) -> Self {
        Failure::Error(k)
    }
}

fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => ErrorKind::PrematureClose,
        _ => ErrorKind::ConnReset,
    }
}

/// Sends the request and reads and checks the reply, within the
/// transaction timeout.
async fn exchange(ctx: &WorkerCtx, conn: &mut Conn, p: &Planned) -> Result<Reply, Failure> {
    let shared = &ctx.shared;
    let xact = ctx.next_xact();
    // IMS dates come from the object's Last-Modified at send time; a
    // reply with an older one is stale.
    let lm_at_send = shared.times_now(&p.info).last_modified;
    let (rtype, ims_lmt) = match p.rtype {
        RequestType::Ims200 | RequestType::Ims304 => match lm_at_send {
            Some(lm) => (p.rtype, Some(lm)),
            None => (RequestType::Basic, None),
        },
        t => (t, None),
    };
    let ims_date = ims_lmt.map(|lm| {
        date::format(if rtype == RequestType::Ims200 {
            lm - 1
        } else {
            lm + 1
        })
    });
    conn.buf.clear();
    let host = &shared.server_hosts[p.info.server as usize];
    let mut path = String::with_capacity(40);
    shared.objects.write_path(&mut path, &p.info);
    let method = match rtype {
        RequestType::Post => "POST",
        RequestType::Head => "HEAD",
        _ => "GET",
    };
    write_request(
        &mut conn.buf,
        &RequestSpec {
            method,
            host,
            path: &path,
            absolute: shared.proxy.is_some(),
            xact,
            keep_alive: true,
            ims: ims_date.as_deref(),
            reload: rtype == RequestType::Reload,
            body_len: p.post_len,
            http10: shared.wl.robots.http10,
        },
    );
    cacheoff_http::body::append(&mut conn.buf, xact, 0, p.post_len);
    let sent = Instant::now();
    if rtype == RequestType::Post {
        ctx.ledger.borrow_mut().post_sent(p.info.oid, xact, sent);
    }
    ctx.stats
        .borrow_mut()
        .record_send(us_since(p.intended, sent));
    let deadline = tokio::time::Instant::from_std(sent + shared.wl.timeouts.xact.0);
    let ask = Ask {
        sent,
        sent_unix: unix_now(),
        info: &p.info,
        rtype,
        ims_lmt,
        lm_at_send,
        xact,
        robot_abort: shared.wl.aborts.robot_aborts(shared.abort_key, xact),
    };
    let result = tokio::time::timeout_at(deadline, read_reply(conn, shared, &ask)).await;
    // A transaction the server was to abort fails one way or another (a
    // proxy may turn it into an error page): that is the abort.
    let server_abort = shared.wl.aborts.server_aborts(shared.abort_key, xact);
    let post_ok = (rtype == RequestType::Post).then_some(matches!(result, Ok(Ok(_))));
    ctx.ledger
        .borrow_mut()
        .finished(p.info.oid, xact, Instant::now(), post_ok);
    match result {
        Ok(Err(Failure::StaleConn | Failure::Error(_))) | Err(_) if server_abort => {
            Err(Failure::Aborted(true))
        }
        Ok(Ok(r)) => Ok(Reply {
            outcome: r.outcome,
            rtype,
            status: r.status,
            bytes: r.bytes,
            keep_alive: r.keep_alive,
            sent,
            done: Instant::now(),
        }),
        Ok(Err(f)) => Err(f),
        Err(_) => Err(Failure::Error(ErrorKind::XactTimeout)),
    }
}

/// What a request asked for, to judge its reply.
struct Ask<'a> {
    info: &'a ObjectInfo,
    rtype: RequestType,
    /// The `Last-Modified` the IMS date was derived from.
    ims_lmt: Option<i64>,
    /// The object's `Last-Modified` when the request was sent.
    lm_at_send: Option<i64>,
    /// When the request was sent, by the monotonic clock and the wall
    /// clock (Unix seconds).
    sent: Instant,
    sent_unix: f64,
    xact: u64,
    /// Close the connection as soon as the reply starts.
    robot_abort: bool,
}

/// A reply that passed every check.
struct Checked {
    outcome: Outcome,
    status: u16,
    bytes: u64,
    keep_alive: bool,
}

async fn read_reply(conn: &mut Conn, shared: &Shared, ask: &Ask<'_>) -> Result<Checked, Failure> {
    conn.stream
        .write_all(&conn.buf)
        .await
        .map_err(|e| Failure::Error(io_kind(&e)))?;
    conn.buf.clear();
    let timeouts = &shared.wl.timeouts;
    let max_head = usize::try_from(shared.wl.robots.max_head.0).unwrap_or(usize::MAX);
    // Head.
    let head = loop {
        if conn.buf.capacity() - conn.buf.len() < 1024 {
            conn.buf.reserve(HEAD_CHUNK);
        }
        let (limit, kind) = if conn.buf.is_empty() {
            (timeouts.first_byte.0, ErrorKind::FirstByteTimeout)
        } else {
            (timeouts.idle.0, ErrorKind::IdleTimeout)
        };
        let n = within(limit, kind, conn.stream.read_buf(&mut conn.buf)).await?;
        if n == 0 {
            return Err(if conn.buf.is_empty() {
                Failure::StaleConn
            } else {
                Failure::Error(ErrorKind::PrematureClose)
            });
        }
        match parse_response_within(&conn.buf, ask.rtype == RequestType::Head, false, max_head) {
            Ok(Some(h)) => break h,
            Ok(None) => continue,
            Err(HttpError::HeadTooLarge(_)) => return Err(ErrorKind::HeadTooLarge.into()),
            Err(_) => return Err(ErrorKind::BadResponse.into()),
        }
    };
    if ask.robot_abort {
        return Err(Failure::Aborted(false));
    }
    if head.status != 200 && head.status != 304 {
        return Err(ErrorKind::HttpStatus.into());
    }
    let outcome = match head.echo {
        Some(e) if e == echo_of(ask.xact) => Outcome::Miss,
        Some(_) => Outcome::Hit,
        // Caches build 304s from a few stored headers only; the origin
        // always echoes, so an echo-less 304 came from a cache.
        None if head.status == 304 => Outcome::Hit,
        None => return Err(ErrorKind::ForeignSource.into()),
    };
    let bodiless = head.status == 304 || ask.rtype == RequestType::Head;
    if bodiless && conn.buf.len() > head.head_len {
        return Err(ErrorKind::UnwantedBody.into());
    }
    let size = if bodiless { 0 } else { ask.info.size };
    let (bytes, keep_alive) = read_body(conn, &head, ask.info.body_seed, size).await?;
    if let Some(md5) = &head.content_md5 {
        if !bodiless && md5[..] != body::md5_digest(ask.info.body_seed, size) {
            return Err(ErrorKind::Md5Mismatch.into());
        }
    }
    let want = if ask.rtype == RequestType::Ims304 {
        304
    } else {
        200
    };
    // "Not modified since a second before its Last-Modified" is never
    // true: the Lucent bug of the third cache-off (304 judged by Expires).
    if head.status == 304 && ask.rtype == RequestType::Ims200 {
        return Err(ErrorKind::FalseNotModified.into());
    }
    if head.status != want {
        // The object may have changed between the IMS date and the
        // server's answer; then either status is right.
        let changed =
            ask.ims_lmt.is_some() && shared.times_now(ask.info).last_modified != ask.ims_lmt;
        if !changed {
            return Err(ErrorKind::HttpStatus.into());
        }
    }
    if ask.rtype == RequestType::Reload && outcome == Outcome::Hit {
        return Err(ErrorKind::ReloadHit.into());
    }
    if ask.rtype == RequestType::Post && outcome == Outcome::Hit {
        return Err(ErrorKind::PostHit.into());
    }
    if outcome == Outcome::Hit && head.status == 200 && !ask.info.cachable {
        return Err(ErrorKind::UncachableHit.into());
    }
    if let (Outcome::Hit, Some(echo)) = (outcome, head.echo) {
        let ctx = &conn.ctx;
        let filler = xact_of_echo(echo);
        let false_hit =
            ctx.ledger
                .borrow()
                .is_false_hit(ask.info.oid, filler, ask.sent, ctx.last_xact());
        if false_hit {
            return Err(ErrorKind::FalseHit.into());
        }
    }
    // The origin dates every reply with the version it sends, never one
    // older than the version current at the request.
    let older = matches!((head.last_modified, ask.lm_at_send), (Some(got), Some(cur)) if got < cur);
    // A copy that had expired a whole second before the request (Expires
    // has one-second resolution) was not revalidated.
    let expired = outcome == Outcome::Hit
        && head
            .expires
            .is_some_and(|e| (e + 1) as f64 <= ask.sent_unix);
    if head.status == 200 && (older || expired) {
        return Err(ErrorKind::StaleContent.into());
    }
    Ok(Checked {
        outcome,
        status: head.status,
        bytes,
        keep_alive,
    })
}

/// Reads and verifies the body of `head` (an object of `size` bytes);
/// returns its length and whether the connection may be reused.
async fn read_body(
    conn: &mut Conn,
    head: &ResponseHead,
    seed: u64,
    size: u64,
) -> Result<(u64, bool), Failure> {
    let mut check = BodyCheck::new(seed, size);
    let start = head.head_len;
    match head.framing {
        Framing::Length(0) if size > 0 => return Err(ErrorKind::NoBody.into()),
        Framing::Length(n) => {
            if n != size {
                return Err(ErrorKind::LengthMismatch.into());
            }
            let have = conn.buf.len() - start;
            if have as u64 > n {
                // Bytes after the body: the connection is not trustworthy.
                check.feed(&conn.buf[start..start + n as usize]);
                return finish_body(&check, false);
            }
            check.feed(&conn.buf[start..]);
            read_body_len(conn, &mut check, n).await?;
        }
        Framing::Chunked => {
            let mut dec = ChunkedDecoder::default();
            let rest = conn.buf.split_off(start);
            dec.decode(&rest, |d| check.feed(d))
                .map_err(|_| Failure::Error(ErrorKind::BadResponse))?;
            while !dec.is_done() {
                if check.received() > size {
                    return Err(ErrorKind::LengthMismatch.into());
                }
                if refill(conn).await? == 0 {
                    return Err(ErrorKind::PrematureClose.into());
                }
                dec.decode(&conn.buf, |d| check.feed(d))
                    .map_err(|_| Failure::Error(ErrorKind::BadResponse))?;
            }
        }
        Framing::UntilClose => {
            check.feed(&conn.buf[start..]);
            loop {
                if refill(conn).await? == 0 {
                    break;
                }
                check.feed(&conn.buf);
                if check.received() > size {
                    return Err(ErrorKind::LengthMismatch.into());
                }
            }
        }
        Framing::Empty => {}
    }
    finish_body(
        &check,
        head.keep_alive && head.framing != Framing::UntilClose,
    )
}

/// Replaces the buffer's contents with the next bytes read; 0 at the end.
async fn refill(conn: &mut Conn) -> Result<usize, Failure> {
    conn.buf.clear();
    conn.buf.reserve(HEAD_CHUNK);
    let idle = conn.ctx.shared.wl.timeouts.idle.0;
    within(
        idle,
        ErrorKind::IdleTimeout,
        conn.stream.read_buf(&mut conn.buf),
    )
    .await
}

/// A read that fails as `kind` if nothing arrives within `limit`.
async fn within<T>(
    limit: Duration,
    kind: ErrorKind,
    read: impl std::future::Future<Output = io::Result<T>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, read).await {
        Ok(r) => r.map_err(|e| Failure::Error(io_kind(&e))),
        Err(_) => Err(kind.into()),
    }
}

async fn read_body_len(conn: &mut Conn, check: &mut BodyCheck, n: u64) -> Result<(), Failure> {
    let mut scratch = conn.ctx.take_buf();
    // Zero only what no earlier user initialised.
    scratch.resize(IO_BUF, 0);
    let idle = conn.ctx.shared.wl.timeouts.idle.0;
    let r = async {
        while check.received() < n {
            // Never read past the body: the next bytes belong to no one.
            let want = ((n - check.received()) as usize).min(scratch.len());
            let got = within(
                idle,
                ErrorKind::IdleTimeout,
                conn.stream.read(&mut scratch[..want]),
            )
            .await?;
            if got == 0 {
                return Err(ErrorKind::PrematureClose.into());
            }
            check.feed(&scratch[..got]);
        }
        Ok(())
    }
    .await;
    conn.ctx.give_buf(scratch);
    r
}

fn finish_body(check: &BodyCheck, keep_alive: bool) -> Result<(u64, bool), Failure> {
    if check.received() == 0 && !check.ok() {
        return Err(ErrorKind::NoBody.into());
    }
    if !check.intact() {
        return Err(ErrorKind::BodyMismatch.into());
    }
    if !check.ok() {
        return Err(ErrorKind::LengthMismatch.into());
    }
    Ok((check.received(), keep_alive))
}
