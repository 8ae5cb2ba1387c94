//! Each product in each of its modes, for real: started in a temporary
//! directory in front of two tiny origin servers, asked for the same URL
//! twice (the second must be a hit: the origin sees one request), its
//! access log read, held to the rules the robots check (reloads, POSTs,
//! If-Modified-Since), power-cut (no process left), restarted, stopped.
//!
//! These need the products installed (`ops/install-products.sh`; `.ci/run`
//! runs them as root) and are ignored by a plain `cargo test`; a missing
//! product is skipped with a message. The reference proxy is the
//! `cacheoff` binary next to this test's (`cargo test --workspace` builds
//! it) or `$CACHEOFF_EXE`.

use crate::support;

use cacheoff_products::{Disk, Mode, ProductSpec, Running, Settings};
use cacheoff_testkit::Reply;
use cacheoff_workload::AddrMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use support::{
    cacheoff_exe, free_port, get, log_counts, product, request, run_dir, Response, READY,
};

/// An origin server: every reply carries `X-Count` (this server's request
/// count, also as `X-Cacheoff-Echo`, where cacheoff's origins echo the
/// transaction) and `X-Origin` (its name), and one `Last-Modified` an hour before
/// the server started; an `If-Modified-Since` not before it gets a 304.
/// Replies are cachable for an hour, except for targets that start with
/// `/nc` (`Cache-Control: private, no-cache`, as cacheoff's origins send
/// for uncachable objects). Request bodies (POST) are read and dropped.
struct Origin {
    scripted: cacheoff_testkit::Origin,
    addr: SocketAddr,
    /// Requests served so far (the last `X-Count`).
    count: Arc<AtomicU64>,
    last_modified: SystemTime,
}

impl Origin {
    fn start(name: &'static str) -> Origin {
        let count = Arc::new(AtomicU64::new(0));
        // Whole seconds, as HTTP dates have.
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let last_modified = SystemTime::UNIX_EPOCH + Duration::from_secs(secs - 3600);
        let all = count.clone();
        let scripted = cacheoff_testkit::origin(move |seen| {
            let n = (all.fetch_add(1, Ordering::SeqCst) + 1).to_string();
            let ims = seen
                .header("if-modified-since")
                .and_then(|v| httpdate::parse_http_date(v).ok());
            let not_modified = ims.is_some_and(|ims| last_modified <= ims);
            let body = format!("hello from {name}\n");
            let (date, lm) = (
                httpdate::fmt_http_date(SystemTime::now()),
                httpdate::fmt_http_date(last_modified),
            );
            let len = body.len().to_string();
            let mut headers = vec![("Date", date.as_str()), ("Last-Modified", lm.as_str())];
            if seen.target.starts_with("/nc") {
                headers.extend([
                    ("Cache-Control", "private, no-cache"),
                    ("Pragma", "no-cache"),
                ]);
            } else {
                headers.push(("Cache-Control", "public, max-age=3600"));
            }
            headers.extend([
                ("X-Count", n.as_str()),
                ("X-Cacheoff-Echo", n.as_str()),
                ("X-Origin", name),
                ("Content-Type", "text/plain"),
                ("Content-Length", len.as_str()),
            ]);
            Reply::new(if not_modified { 304 } else { 200 }, &headers, &body)
        });
        Origin {
            addr: scripted.addr(),
            scripted,
            count,
            last_modified,
        }
    }

    /// Requests for `path`, as received.
    fn requests(&self, path: &str) -> u64 {
        self.scripted.seen(path).len() as u64
    }
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s[s.rfind(')').unwrap() + 1..].split_whitespace().next();
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// Live processes whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let f: Vec<&str> = s[s.rfind(')').unwrap() + 1..].split_whitespace().collect();
        if f[2] == pgid.to_string() && !matches!(f[0], "Z" | "X") {
            out.push(pid);
        }
    }
    out
}

fn pgid_of(pid: i32) -> i32 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap()
}

/// Asks for `path` on each origin, twice, through the product: forward
/// with absolute URIs, reverse by name. Returns each origin's first reply
/// count. Panics unless the second reply is the first's (a hit) and each
/// origin saw one request.
fn twice_each(r: &Running, mode: Mode, origins: &[&Origin], path: &str) {
    for (i, o) in origins.iter().enumerate() {
        let name = format!("s{}.bench.tst", i + 1);
        let (target, host, seen_as) = match mode {
            Mode::Forward => {
                let url = format!("http://{}{path}", o.addr);
                (url.clone(), o.addr.to_string(), path.to_string())
            }
            Mode::Reverse => (path.to_string(), name.clone(), path.to_string()),
        };
        let a = get(r.listen(), &target, &host);
        let b = get(r.listen(), &target, &host);
        let what = format!("{} {mode}: {target} (Host {host})", r.product());
        assert_eq!(a.status, 200, "{what}\n{}", r.tails());
        assert_eq!(b.status, 200, "{what}");
        assert_eq!(
            a.header("X-Origin"),
            Some(format!("s{}", i + 1)),
            "{what}: routed to the wrong origin"
        );
        assert_eq!(
            a.header("X-Count"),
            b.header("X-Count"),
            "{what}: the second reply was not a hit"
        );
        assert_eq!(o.requests(&seen_as), 1, "{what}: origin requests");
    }
}

/// The request target and Host for `path` on origin `o`, named `name` in
/// the address map: an absolute URI forward, origin-form by name reverse.
fn aim(mode: Mode, o: &Origin, name: &str, path: &str) -> (String, String) {
    match mode {
        Mode::Forward => (format!("http://{}{path}", o.addr), o.addr.to_string()),
        Mode::Reverse => (path.to_string(), name.to_string()),
    }
}

/// What the cache-off's robots check of every cache, on origin `o`
/// (`s1.bench.tst`): a reload (`Cache-Control: no-cache` and `Pragma:
/// no-cache`) is answered by the origin; a POST empties the cache of its
/// URL (RFC 9111 §4.4: neither the copy from before it nor the POST's own
/// reply is served afterwards); `If-Modified-Since` a second before
/// Last-Modified gets the whole object and a second after it a 304, for
/// stored, missing and uncachable objects; a 304 made after asking the
/// origin carries the origin's echo (the robots take an echo-less 304 for
/// a hit).
fn cache_rules(r: &Running, mode: Mode, o: &Origin) {
    let send = |method: &str, path: &str, headers: &[String], body: &str| {
        let (target, host) = aim(mode, o, "s1.bench.tst", path);
        let reply = request(r.listen(), method, &target, &host, headers, body);
        assert!(
            matches!(reply.status, 200 | 304),
            "{} {mode}: {method} {path}: status {}\n{}",
            r.product(),
            reply.status,
            r.tails()
        );
        reply
    };
    let what = |s: &str| format!("{} {mode}: {s}", r.product());
    let count = |rep: &Response| rep.header("X-Count");

    let a = send("GET", "/reload", &[], "");
    let b = send("GET", "/reload", &[], "");
    assert_eq!(
        count(&a),
        count(&b),
        "{}",
        what("GET /reload twice: no hit")
    );
    let reload = ["Cache-Control: no-cache".into(), "Pragma: no-cache".into()];
    let c = send("GET", "/reload", &reload, "");
    assert_eq!(c.status, 200, "{}", what("the reload"));
    assert_ne!(
        count(&c),
        count(&a),
        "{}",
        what("a reload was answered from the cache")
    );
    assert_eq!(o.requests("/reload"), 2, "{}", what("origin requests"));

    let a = send("GET", "/post", &[], "");
    let b = send("GET", "/post", &[], "");
    assert_eq!(count(&a), count(&b), "{}", what("GET /post twice: no hit"));
    let p = send("POST", "/post", &[], "x=1");
    assert_eq!(p.status, 200, "{}", what("the POST"));
    assert_ne!(
        count(&p),
        count(&a),
        "{}",
        what("a POST was answered from the cache")
    );
    let c = send("GET", "/post", &[], "");
    assert_ne!(
        count(&c),
        count(&a),
        "{}",
        what("the copy from before a POST was served after it")
    );
    assert_ne!(
        count(&c),
        count(&p),
        "{}",
        what("a POST's reply was served to a GET")
    );
    assert_eq!(o.requests("/post"), 3, "{}", what("origin requests"));

    let ims = |secs: i64| {
        let t = if secs < 0 {
            o.last_modified - Duration::from_secs(secs.unsigned_abs())
        } else {
            o.last_modified + Duration::from_secs(secs as u64)
        };
        vec![format!("If-Modified-Since: {}", httpdate::fmt_http_date(t))]
    };
    // Stored, then asked; missing; uncachable.
    send("GET", "/ims", &[], "");
    for path in ["/ims", "/ims-missing", "/nc-ims"] {
        for (secs, status) in [(1, 304), (-1, 200), (1, 304)] {
            let before = o.requests(path);
            let rep = send("GET", path, &ims(secs), "");
            if rep.status == 304 && o.requests(path) > before {
                assert_eq!(
                    rep.header("X-Cacheoff-Echo"),
                    Some(o.count.load(Ordering::SeqCst).to_string()),
                    "{}",
                    what(&format!("GET {path}: a 304 after asking the origin"))
                );
            }
            assert_eq!(
                rep.status,
                status,
                "{}",
                what(&format!(
                    "GET {path} If-Modified-Since Last-Modified{secs:+} s"
                ))
            );
            assert_eq!(
                rep.body.is_empty(),
                status == 304,
                "{}",
                what(&format!("GET {path}: the body of a {status}"))
            );
        }
        // A 304 the origin sent was not stored in place of the object.
        let whole = send("GET", path, &[], "");
        assert!(
            whole.status == 200 && !whole.body.is_empty(),
            "{}",
            what(&format!("GET {path} after the IMS requests"))
        );
    }
}

fn scenario(name: &str, mode: Mode) {
    let spec = product(name, mode);
    let exe = cacheoff_exe();
    let t = Instant::now();
    let version = spec.version(&exe).unwrap();
    eprintln!("{name} {mode}: version took {:?}", t.elapsed());
    eprintln!("{name} {mode}: {} ({:?})", version.line, version.number);
    assert!(
        version.number.is_some(),
        "{name}: no version in {version:?}"
    );
    let dir = run_dir();
    let (o1, o2) = (Origin::start("s1"), Origin::start("s2"));
    let map = AddrMap::for_servers(&[o1.addr, o2.addr]);
    let settings = Settings {
        listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        mem: 64 << 20,
        disk: spec.disk_cache.then(|| Disk::in_run_dir(128 << 20)),
        addrmap: (mode == Mode::Reverse).then_some(&map),
        parent: None,
        dir: dir.path().join(name),
        exe: exe.clone(),
        tls: None,
    };
    let t0 = Instant::now();
    let mut r = spec.start(mode, &settings).unwrap();
    eprintln!("{name} {mode}: started in {:?}", t0.elapsed());
    r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{name} {mode}: ready in {:?}", t0.elapsed());

    twice_each(&r, mode, &[&o1, &o2], "/x");
    let t = Instant::now();
    let c = log_counts(&r, 4, 2);
    eprintln!("{name} {mode}: log read after {:?}", t.elapsed());
    assert_eq!(
        (c.requests, c.hits),
        (4, 2),
        "{name} {mode}: {c:?}\n{}{}",
        r.tails(),
        std::fs::read_to_string(r.access_log()).unwrap_or_default()
    );

    cache_rules(&r, mode, &o1);

    let pids = r.pids();
    assert!(!pids.is_empty());
    let pgid = pgid_of(pids[0]);
    let t = Instant::now();
    let cut = r.power_cut().unwrap();
    eprintln!("{name} {mode}: power_cut took {:?}", t.elapsed());
    assert!(cut.elapsed() < Duration::from_secs(15));
    assert_eq!(r.pids(), Vec::<i32>::new(), "{name}: alive after the cut");
    assert_eq!(group_members(pgid), Vec::<i32>::new());
    for p in &pids {
        assert!(!alive(*p), "{name}: pid {p} alive after the cut");
    }
    assert!(!r.is_running());

    let t = Instant::now();
    let on = r.restart().unwrap();
    eprintln!("{name} {mode}: restart took {:?}", t.elapsed());
    let ready = r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{name} {mode}: ready {:?} after the power-on",
        ready.duration_since(on)
    );
    let (target, host) = match mode {
        Mode::Forward => (format!("http://{}/x", o1.addr), o1.addr.to_string()),
        Mode::Reverse => ("/x".to_string(), "s1.bench.tst".to_string()),
    };
    let after = get(r.listen(), &target, &host);
    assert_eq!(after.status, 200);
    assert_eq!(after.header("X-Origin").as_deref(), Some("s1"));
    eprintln!(
        "{name} {mode}: after the restart /x was a {} (origin requests: {})",
        if o1.requests("/x") == 1 {
            "hit"
        } else {
            "miss"
        },
        o1.requests("/x")
    );

    let pids = r.pids();
    assert!(!pids.is_empty());
    let t = Instant::now();
    r.stop().unwrap();
    eprintln!("{name} {mode}: stopped in {:?}", t.elapsed());
    assert_eq!(r.pids(), Vec::<i32>::new(), "{name}: alive after stop");
    for p in &pids {
        assert!(!alive(*p), "{name}: pid {p} alive after stop");
    }
    // The log is complete after a stop; the restart added one request.
    let c = r.hits_from_log().unwrap();
    assert!(c.requests >= 5 && c.hits >= 2, "{name} {mode}: {c:?}");
}

macro_rules! scenarios {
    ($($test:ident: $name:literal $mode:ident;)*) => {$(
        #[test]
        #[ignore = "needs the products (ops/install-products.sh); .ci/run runs it"]
        fn $test() {
            scenario($name, Mode::$mode);
        }
    )*};
}

scenarios! {
    squid_forward: "squid" Forward;
    squid_reverse: "squid" Reverse;
    varnish_reverse: "varnish" Reverse;
    nginx_reverse: "nginx" Reverse;
    trafficserver_forward: "trafficserver" Forward;
    trafficserver_reverse: "trafficserver" Reverse;
    reference_forward: "reference" Forward;
    reference_reverse: "reference" Reverse;
}

/// Traffic Server with a lineup's tiny cache, 8 MB of memory and 8 MB of
/// disk or memory alone: a cache file under 9 MiB crashed it at start
/// (SIGSEGV), so it gets 9 MiB (`min_disk_mb`), starts and caches.
#[test]
#[ignore = "needs Traffic Server (ops/install-products.sh); .ci/run runs it"]
fn trafficserver_runs_with_a_tiny_cache() {
    let spec = product("trafficserver", Mode::Reverse);
    assert_eq!(spec.disk_size(8 << 20), 9 << 20);
    for disk in [true, false] {
        let dir = run_dir();
        let o = Origin::start("s1");
        let map = AddrMap::for_servers(&[o.addr]);
        let settings = Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
            mem: 8 << 20,
            disk: disk.then(|| Disk::in_run_dir(8 << 20)),
            addrmap: Some(&map),
            parent: None,
            dir: dir.path().join("trafficserver"),
            exe: cacheoff_exe(),
            tls: None,
        };
        let mut r = spec.start(Mode::Reverse, &settings).unwrap();
        r.wait_ready(READY)
            .unwrap_or_else(|e| panic!("disk {disk}: {e}"));
        let storage = std::fs::read_to_string(settings.dir.join("etc/storage.config")).unwrap();
        assert!(storage.trim_end().ends_with(" 9M"), "{storage}");
        twice_each(&r, Mode::Reverse, &[&o], "/tiny");
        r.stop().unwrap();
    }
}

/// h2o caches nothing (a baseline surrogate): each name reaches its own
/// origin server every time, any other name gets h2o's 404, the log
/// counts every request and no hit; it is power-cut and restarted like
/// the others.
#[test]
#[ignore = "needs h2o (ops/install-products.sh); .ci/run runs it"]
fn h2o_relays_every_request_by_host_and_caches_nothing() {
    let spec = product("h2o", Mode::Reverse);
    assert!(!spec.caches && spec.log.hits.is_empty());
    let exe = cacheoff_exe();
    let version = spec.version(&exe).unwrap();
    assert!(version.number.is_some(), "{version:?}");
    let dir = run_dir();
    let (o1, o2) = (Origin::start("s1"), Origin::start("s2"));
    let map = AddrMap::for_servers(&[o1.addr, o2.addr]);
    let settings = Settings {
        listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        mem: 16 << 20,
        disk: None,
        addrmap: Some(&map),
        parent: None,
        dir: dir.path().join("h2o"),
        exe,
        tls: None,
    };
    let mut r = spec.start(Mode::Reverse, &settings).unwrap();
    r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    let ask = |r: &Running| {
        for (o, name) in [(&o1, "s1"), (&o2, "s2")] {
            let before = o.requests("/x");
            let reply = get(r.listen(), "/x", &format!("{name}.bench.tst"));
            assert_eq!(reply.status, 200, "{}", r.tails());
            assert_eq!(reply.header("X-Origin").as_deref(), Some(name));
            assert_eq!(o.requests("/x"), before + 1, "{name}: not relayed");
        }
    };
    ask(&r);
    ask(&r);
    assert_eq!(get(r.listen(), "/x", "elsewhere.invalid").status, 404);
    // h2o writes a request's log line after its reply: a power cut right
    // after the reply can lose it. The cut comes once the log has all 5.
    let logged = log_counts(&r, 5, 0);
    assert_eq!(logged.requests, 5, "{}", r.tails());

    let pids = r.pids();
    r.power_cut().unwrap();
    assert!(pids.iter().all(|p| !alive(*p)), "alive after the cut");
    r.restart().unwrap();
    r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    ask(&r);
    r.stop().unwrap();
    let c = r.hits_from_log().unwrap();
    assert_eq!(
        (c.requests, c.hits),
        (7, 0),
        "{}",
        std::fs::read_to_string(r.access_log()).unwrap_or_default()
    );
}

/// Dropping a running product (as an interrupted lineup does) leaves
/// nothing running.
#[test]
#[ignore = "needs Squid (ops/install-products.sh); .ci/run runs it"]
fn dropping_a_running_product_kills_it() {
    let spec = product("squid", Mode::Forward);
    let dir = run_dir();
    let settings = Settings {
        listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        mem: 16 << 20,
        disk: None,
        addrmap: None,
        parent: None,
        dir: dir.path().join("squid"),
        exe: cacheoff_exe(),
        tls: None,
    };
    let mut r = spec.start(Mode::Forward, &settings).unwrap();
    r.wait_ready(READY).unwrap_or_else(|e| panic!("{e}"));
    let pids = r.pids();
    assert!(!pids.is_empty());
    drop(r);
    for p in &pids {
        assert!(!alive(*p), "pid {p} alive after drop");
    }
}

/// A product that cannot start says so, with its own log's tail.
#[test]
#[ignore = "needs nginx (ops/install-products.sh); .ci/run runs it"]
fn a_failed_start_is_explained() {
    let spec = product("nginx", Mode::Reverse);
    let dir = run_dir();
    let o = Origin::start("s1");
    let map = AddrMap::for_servers(&[o.addr]);
    // The port is taken.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let settings = Settings {
        listen: taken.local_addr().unwrap(),
        mem: 16 << 20,
        disk: None,
        addrmap: Some(&map),
        parent: None,
        dir: dir.path().join("nginx"),
        exe: cacheoff_exe(),
        tls: None,
    };
    let mut r = spec.start(Mode::Reverse, &settings).unwrap();
    let e = r
        .wait_ready(Duration::from_secs(20))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("nginx exited while starting"), "{e}");
    assert!(e.contains("Address already in use"), "{e}");
}

#[test]
fn unsupported_modes_and_missing_maps_are_refused_before_anything_starts() {
    let dir = run_dir();
    let settings = Settings {
        listen: SocketAddr::from(([127, 0, 0, 1], 1)),
        mem: 1 << 20,
        disk: None,
        addrmap: None,
        parent: None,
        dir: dir.path().join("x"),
        exe: cacheoff_exe(),
        tls: None,
    };
    let varnish = ProductSpec::builtin("varnish").unwrap();
    let e = varnish
        .start(Mode::Forward, &settings)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("varnish: cannot run in forward mode (only with a parent proxy"),
        "{e}"
    );
    let squid = ProductSpec::builtin("squid").unwrap();
    let e = squid
        .start(Mode::Reverse, &settings)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("needs the origin address map"), "{e}");
    let parent = Settings {
        parent: Some(SocketAddr::from(([127, 0, 0, 1], 2))),
        ..settings.clone()
    };
    let nginx = ProductSpec::builtin("nginx").unwrap();
    let e = nginx
        .start(Mode::Reverse, &parent)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no parent proxy"), "{e}");
    assert!(!dir.path().join("x").exists(), "nothing was written");
}
