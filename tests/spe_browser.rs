//! The Multiplier is a proxy for real users: two users of Debian's
//! Chromium, headless, each with a fresh profile, open a page with a
//! stylesheet, a script and six PNG images through the Multiplier. They
//! get the Collector's replies; the proxies under test, two reference
//! proxies and Squid (the Collector their parent), get a copy of every
//! request. The page's own script records what the browser received (each
//! image's decoded size, the length and checksum of each object's bytes)
//! and which requests went to the network (Resource Timing); the test
//! holds the Multiplier's summary, the proxies' access logs and the
//! origin's counts to that.
//!
//! The first user's requests are the proxies' misses, the second's their
//! hits; the origin sees each object once, fetched by the Collector.
//!
//! Chromium also asks Google's hosts for things on its own, whatever the
//! flags (update checks, sign-in): CONNECTs, which the Multiplier refuses,
//! and a POST, which goes to the Collector only and is refused there (its
//! only destination is the origin). The test counts them apart.
//!
//! `.ci/run` installs chromium and squid and runs this (a plain `cargo
//! test` skips it).

use crate::support;

use cacheoff_multiplier::{Config, ProxyUnderTest};
use cacheoff_proxy::{DestRule, Proxy, Role};
use cacheoff_testkit::{binary, origin_on, Origin, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The page's images: width and height, so each has its own size (the
/// largest, 150 KB, spans several of the Collector's body pieces).
const IMAGES: [(u32, u32); 6] = [(1, 1), (8, 8), (33, 17), (64, 48), (150, 100), (256, 200)];

/// The Last-Modified of every object.
const LAST_MODIFIED: &str = "Tue, 01 Apr 2025 00:00:00 GMT";

/// FNV-1a, 32 bits: the checksum the page's script computes too.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h: u32, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// A valid RGB PNG of `w` x `h` pixels drawn from `seed`, its zlib
/// stream made of stored (uncompressed) deflate blocks.
fn png(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 56) as u8
    };
    // Each row: filter type 0 (none), then its pixels.
    let row = (w * 3 + 1) as usize;
    let raw: Vec<u8> = (0..row * h as usize)
        .map(|i| if i % row == 0 { 0 } else { next() })
        .collect();
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, b) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = b.len() as u16;
        z.extend(len.to_le_bytes());
        z.extend((!len).to_le_bytes());
        z.extend_from_slice(b);
    }
    z.extend(adler32(&raw).to_be_bytes());
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, no filter, no interlace
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], ihdr), (b"IDAT", z), (b"IEND", Vec::new())] {
        out.extend((data.len() as u32).to_be_bytes());
        let mut typed = kind.to_vec();
        typed.extend(&data);
        out.extend(&typed);
        out.extend(crc32(&typed).to_be_bytes());
    }
    out
}

/// The page's script: once everything loaded, it reads each object back
/// (from the browser's own cache, which the proxy filled) and writes what
/// it found, and which requests went to the network, into `#result`.
const SCRIPT: &str = r#"addEventListener('load', async () => {
  const out = document.getElementById('result');
  try {
    const fnv = b => { let h = 0x811c9dc5; for (const x of b) { h ^= x; h = Math.imul(h, 0x01000193) >>> 0; } return h; };
    const images = Array.from(document.images, i => ({path: new URL(i.src).pathname, width: i.naturalWidth, height: i.naturalHeight}));
    const bodies = {};
    for (const path of images.map(i => i.path).concat(['/style.css', '/app.js'])) {
      const b = new Uint8Array(await (await fetch(path)).arrayBuffer());
      bodies[path] = {length: b.length, fnv: fnv(b)};
    }
    const network = performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
      .map(e => ({path: new URL(e.name).pathname, initiator: e.initiatorType || 'navigation', transfer: e.transferSize}));
    out.textContent = JSON.stringify({images, bodies, network});
  } catch (e) {
    out.textContent = JSON.stringify({error: String(e)});
  }
});
"#;

fn page() -> String {
    let imgs: String = (0..IMAGES.len())
        .map(|i| format!("<img src=\"/img/{i}.png\" alt=\"{i}\">\n"))
        .collect();
    // An empty data: icon: no /favicon.ico request.
    format!(
        "<!doctype html>\n<html><head><title>SPE in a browser</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n<link rel=\"stylesheet\" href=\"/style.css\">\n\
         </head><body>\n<h1>Six images</h1>\n{imgs}<pre id=\"result\">pending</pre>\n\
         <script src=\"/app.js\"></script>\n</body></html>\n"
    )
}

/// The origin's object at `path`: its content type and body, the same
/// for every request.
fn object(path: &str) -> Option<(&'static str, Vec<u8>)> {
    match path {
        "/page.html" => Some(("text/html; charset=utf-8", page().into_bytes())),
        "/style.css" => Some((
            "text/css",
            b"body { font-family: sans-serif; }\nimg { margin: 4px; border: 1px solid #888; }\n"
                .to_vec(),
        )),
        "/app.js" => Some(("text/javascript", SCRIPT.as_bytes().to_vec())),
        _ => {
            let i: usize = path
                .strip_prefix("/img/")?
                .strip_suffix(".png")?
                .parse()
                .ok()?;
            let (w, h) = *IMAGES.get(i)?;
            let seed = u64::from(fnv1a(path.as_bytes())) << 32 | u64::from(w * h);
            Some(("image/png", png(w, h, seed)))
        }
    }
}

/// Every path the page makes the browser ask for.
fn page_paths() -> Vec<String> {
    let mut p: Vec<String> = ["/page.html", "/style.css", "/app.js"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    p.extend((0..IMAGES.len()).map(|i| format!("/img/{i}.png")));
    p
}

/// The origin on 127.0.0.2 (any port): the page's objects, cachable, and
/// a 404 for anything else; it counts the requests per path.
fn origin() -> Origin {
    origin_on("127.0.0.2:0".parse().unwrap(), |seen| {
        match object(&seen.path) {
            Some((ctype, body)) => binary(
                200,
                &[
                    ("Content-Type", ctype),
                    ("Cache-Control", "public, max-age=3600"),
                    ("Last-Modified", LAST_MODIFIED),
                ],
                body,
            ),
            None => Reply::new(404, &[("Cache-Control", "no-store")], ""),
        }
    })
}

/// Requests the origin had, per path.
fn requests(origin: &Origin) -> BTreeMap<String, u32> {
    let mut n = BTreeMap::new();
    for seen in origin.all() {
        *n.entry(seen.path).or_default() += 1;
    }
    n
}

/// What one user's page recorded, from the DOM Chromium dumped.
fn browse(user: &str, proxy: SocketAddr, url: &str) -> Value {
    let profile = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = Command::new("timeout")
        .arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--proxy-server=http://{proxy}"),
            // Chromium never proxies loopback unless told to.
            "--proxy-bypass-list=<-loopback>",
            // Fewer requests of Chromium's own (update checks, sign-in,
            // network time); those left are counted apart below.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate",
            // Dump the DOM once the page's script has had its fetches
            // answered (virtual time waits for the network).
            "--virtual-time-budget=10000",
            "--dump-dom",
            url,
        ])
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{user}: chromium failed ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{user}: chromium took {:?}", t.elapsed());
    let text = dom
        .split_once("<pre id=\"result\">")
        .and_then(|(_, r)| r.split_once("</pre>"))
        .map(|(t, _)| {
            t.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| panic!("{user}: no #result in the DOM:\n{dom}"));
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{user}: the page's script did not finish ({e}): {text}"));
    assert!(v.get("error").is_none(), "{user}: page script: {v}");
    v
}

/// URL -> the code/status of each of its lines, from an access log in
/// Squid's native format.
fn access_log(log: &Path) -> BTreeMap<String, Vec<String>> {
    let mut by_url: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 6 {
            by_url
                .entry(f[6].to_string())
                .or_default()
                .push(f[3].to_string());
        }
    }
    by_url
}

fn under_test(parent: SocketAddr, log: &Path) -> Proxy {
    support::proxy::start(|c| {
        c.parent = Some(parent.to_string());
        c.memory = 64 << 20;
        c.access_log = Some(log.to_path_buf());
    })
}

#[test]
#[ignore = "needs Debian's chromium and squid; .ci/run installs them and runs this"]
fn two_chromium_users_get_the_collectors_bytes_and_every_proxy_a_copy() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "chromium is not installed: run .ci/run (it installs Debian's chromium)"
    );
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let origin = origin();
    let base = format!("http://{}", origin.addr());

    let collector_log = dir.path().join("collector.log");
    let collector = support::proxy::start(|c| {
        c.role = Role::Collector;
        c.memory = 64 << 20;
        c.access_log = Some(collector_log.clone());
        // Whatever Chromium asks for on its own goes no further than the
        // Collector: only the origin is a destination.
        c.allow_dest = Some(vec![origin.addr().to_string().parse::<DestRule>().unwrap()]);
    });
    let logs: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|n| dir.path().join(format!("{n}.log")))
        .collect();
    let reference: Vec<Proxy> = logs
        .iter()
        .map(|l| under_test(collector.addr(), l))
        .collect();
    let mut squid = support::proxy::squid_under(collector.addr(), dir.path());
    let proxies = vec![
        ("alpha", reference[0].addr(), logs[0].clone()),
        ("beta", reference[1].addr(), logs[1].clone()),
        ("squid", squid.listen(), squid.access_log().to_path_buf()),
    ];
    let mut cfg = Config::new(
        "127.0.0.1:0".parse().unwrap(),
        collector.addr(),
        proxies
            .iter()
            .map(|(n, addr, _)| ProxyUnderTest {
                name: n.to_string(),
                addr: *addr,
            })
            .collect(),
        dir.path().join("spe"),
    );
    cfg.workers = 2;
    cfg.stop_grace = Duration::from_secs(5);
    let m = cacheoff_multiplier::start(cfg).unwrap();

    let url = format!("{base}/page.html");
    let users: Vec<Value> = ["first user", "second user"]
        .iter()
        .map(|u| browse(u, m.addr(), &url))
        .collect();
    let summary = m.stop().unwrap();
    // Its access log is whole once it stopped.
    squid.stop().unwrap();

    // What each user's browser received: the origin's bytes, and images
    // that decoded to their size.
    let paths = page_paths();
    let mut fetched = 0u64;
    for (user, v) in users.iter().enumerate() {
        let images = v["images"].as_array().unwrap();
        assert_eq!(images.len(), IMAGES.len(), "user {user}: {v}");
        for (i, img) in images.iter().enumerate() {
            let (w, h) = IMAGES[i];
            assert_eq!(img["path"], format!("/img/{i}.png"));
            assert_eq!(
                (img["width"].as_u64(), img["height"].as_u64()),
                (Some(u64::from(w)), Some(u64::from(h))),
                "user {user}: image {i} did not decode: {img}"
            );
        }
        for path in &paths[1..] {
            let (_, body) = object(path).unwrap();
            let got = &v["bodies"][path.as_str()];
            assert_eq!(
                got["length"].as_u64(),
                Some(body.len() as u64),
                "user {user}: {path}"
            );
            assert_eq!(
                got["fnv"].as_u64(),
                Some(u64::from(fnv1a(&body))),
                "user {user}: {path}"
            );
        }
        // The browser's own account of its network requests: each of the
        // page's objects once; the script's reads came from its cache.
        let mut network: Vec<String> = Vec::new();
        for e in v["network"].as_array().unwrap() {
            let transfer = e["transfer"].as_u64().unwrap();
            if e["initiator"] == "fetch" {
                assert_eq!(transfer, 0, "user {user}: a read went to the network: {e}");
            } else if transfer > 0 {
                network.push(e["path"].as_str().unwrap().to_string());
            }
        }
        network.sort();
        let mut expected = paths.clone();
        expected.sort();
        assert_eq!(network, expected, "user {user}: {v}");
        fetched += network.len() as u64;
    }

    // Every request the browser sent reached the Multiplier. Chromium's own
    // (CONNECTs to Google's hosts, refused; an update check's POST, which
    // goes to the Collector only) are counted apart.
    let p = |name: &str| &summary.proxy(name).unwrap().span;
    let own = summary.refused + p("alpha").counts.not_copied_unsafe;
    assert_eq!(summary.requests, fetched + own, "{summary:?}");
    for (name, _, log) in &proxies {
        let s = p(name);
        // Its own log: each object asked for once per user, nothing else.
        let mut seen = access_log(log);
        // Squid's log also has the readiness probe (in origin form).
        seen.retain(|u, _| u.starts_with("http://"));
        let want: BTreeMap<String, usize> = paths
            .iter()
            .map(|p| (format!("{base}{p}"), users.len()))
            .collect();
        let got: BTreeMap<String, usize> = seen.iter().map(|(u, c)| (u.clone(), c.len())).collect();
        assert_eq!(got, want, "{name}: {seen:?}");
        // And the Multiplier's: a copy of each, completed, compared, and
        // matching the Collector's reply.
        assert_eq!(s.counts.copied, fetched, "{name}: {:?}", s.counts);
        assert_eq!(s.counts.dropped, 0, "{name}");
        assert_eq!(s.counts.completed, fetched, "{name}: {:?}", s.counts);
        assert_eq!(
            s.counts.errors + s.counts.uncompared,
            0,
            "{name}: {:?}",
            s.counts
        );
        assert_eq!(s.counts.mismatches, 0, "{name}: {:?}", s.examples);
        // The first user's requests were its misses, the second's its hits.
        let n = paths.len() as u64;
        assert_eq!(s.counts.validated_misses, n, "{name}: {:?}", s.counts);
        assert_eq!(s.counts.validated_hits, n, "{name}: {:?}", s.counts);
    }
    assert_eq!(summary.collector.errors, 0, "{:?}", summary.collector);
    // The second user's requests were the Collector's hits (and a first
    // user's request may be too, when a proxy's miss got there first).
    assert!(
        summary.collector.hits >= paths.len() as u64,
        "{:?}",
        summary.collector
    );
    let ranked = summary.ranking.iter().filter(|r| r.rank.is_some()).count();
    assert_eq!(ranked, proxies.len(), "{:?}", summary.ranking);

    // Chromium's own requests that reached the Collector were refused
    // there, never sent on.
    let collected = access_log(&collector_log);
    let stray: Vec<(&String, &Vec<String>)> = collected
        .iter()
        .filter(|(u, _)| !u.starts_with(&base))
        .collect();
    let urls: Vec<&str> = stray
        .iter()
        .map(|(u, _)| &u[..u.find('?').unwrap_or(u.len())])
        .collect();
    eprintln!("Chromium's own requests at the Collector: {urls:?}");
    for (u, codes) in &stray {
        assert!(codes.iter().all(|c| c.ends_with("/403")), "{u}: {codes:?}");
    }
    let stray_requests: usize = stray.iter().map(|(_, c)| c.len()).sum();
    assert_eq!(stray_requests as u64, p("alpha").counts.not_copied_unsafe);

    // The origin saw each object once: the Collector fetched it, and the
    // proxies' misses went through the Collector.
    let at_origin = requests(&origin);
    let expected: BTreeMap<String, u32> = paths.iter().map(|p| (p.clone(), 1)).collect();
    assert_eq!(at_origin, expected);
    eprintln!("took {:?}", t0.elapsed());
}
