//! A whole connection through the reference proxy: the input is split
//! (by its first byte) into what a client sends and what the origin
//! answers to each request. Beyond "never panics": the origin never
//! receives more requests than the client's bytes hold (no smuggling,
//! whatever the framing tricks), and the exchange ends promptly (no hang).
#![no_main]

use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::{parse_request, parse_request_strict};
use cacheoff_proxy::{Proxy, ProxyConfig, Upstream};
use libfuzzer_sys::fuzz_target;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One proxy and one origin for the whole fuzzing process; inputs run
/// one after the other, each resetting what the origin answers.
struct World {
    /// Serves for the life of the process.
    proxy: Proxy,
    reply: Arc<Mutex<Vec<u8>>>,
    requests: Arc<AtomicUsize>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let origin = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = origin.local_addr().unwrap();
        let reply: Arc<Mutex<Vec<u8>>> = Arc::default();
        let requests: Arc<AtomicUsize> = Arc::default();
        let (r, n) = (reply.clone(), requests.clone());
        std::thread::spawn(move || {
            for s in origin.incoming().flatten() {
                let (r, n) = (r.clone(), n.clone());
                std::thread::spawn(move || origin_conn(s, &r, &n));
            }
        });
        let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.upstream = Upstream::Reverse(addr.to_string());
        cfg.workers = 1;
        // A store, so hits, ranges and conditionals are driven too (what
        // earlier inputs left in it may answer later ones).
        cfg.memory = 1 << 20;
        cfg.connect_timeout = Duration::from_millis(300);
        cfg.read_timeout = Duration::from_millis(300);
        cfg.client_idle_timeout = Duration::from_millis(300);
        cfg.client_header_timeout = Duration::from_millis(300);
        cfg.client_write_timeout = Duration::from_millis(300);
        World {
            proxy: Proxy::start(cfg).unwrap(),
            reply,
            requests,
        }
    })
}

/// The origin: counts a request head it can read (leniently, as a
/// careless origin would), answers it with the input's origin bytes,
/// then closes.
fn origin_conn(mut s: TcpStream, reply: &Mutex<Vec<u8>>, requests: &AtomicUsize) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Ok(Some(_)) = parse_request(&buf, false) {
            requests.fetch_add(1, Ordering::SeqCst);
            let answer = reply.lock().unwrap().clone();
            let _ = s.write_all(&answer);
            // Closed after one answer: a request the proxy then sends on
            // this connection is never read, so its retry elsewhere (an
            // idempotent request may be repeated) is not counted twice.
            return;
        }
        match s.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
}

/// How many whole requests `bytes` hold, read as strictly as a server
/// must (RFC 9112): each head, then its body by its own framing.
fn requests_in(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    while let Ok(Some(h)) = parse_request_strict(bytes, false, 64 * 1024) {
        bytes = &bytes[h.head_len..];
        if h.chunked {
            let mut dec = ChunkedDecoder::default();
            let Ok(used) = dec.decode(bytes, |_| {}) else {
                break;
            };
            if !dec.is_done() {
                break;
            }
            bytes = &bytes[used..];
        } else {
            let len = h.content_length.unwrap_or(0) as usize;
            if len > bytes.len() {
                break;
            }
            bytes = &bytes[len..];
        }
        n += 1;
    }
    n
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = rest.len() * split as usize / 256;
    let (client, origin) = rest.split_at(at);
    let w = world();
    *w.reply.lock().unwrap() = origin.to_vec();
    w.requests.store(0, Ordering::SeqCst);

    let started = Instant::now();
    let mut c = TcpStream::connect(w.proxy.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = c.write_all(client);
    let _ = c.shutdown(Shutdown::Write);
    let mut sink = [0u8; 16384];
    while matches!(c.read(&mut sink), Ok(1..)) {}
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the proxy held the connection for {:?}",
        started.elapsed()
    );
    let sent = requests_in(client);
    let forwarded = w.requests.load(Ordering::SeqCst);
    assert!(
        forwarded <= sent,
        "the origin got {forwarded} requests for the client's {sent}"
    );
});
