//! One check's frame: its identity ([`Check`]), what it decided
//! ([`Outcome`]), and the context it runs in ([`Ctx`]): its own paths on
//! the origin, requests through the proxy, and the log of every exchange.

use crate::client::{self, Mode, Resp, Target};
use crate::origin::{Origin, Reply, Seen};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The proxy did what the section asks (or allows and the check wants).
    Pass,
    /// The proxy broke a MUST or SHOULD of the section.
    Fail,
    /// An optional behaviour (MAY, or a feature) the proxy does not do.
    Optional,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Optional => "optional",
        }
    }
}

/// A verdict with the reason for it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    pub detail: String,
}

pub fn pass(detail: impl Into<String>) -> Outcome {
    Outcome {
        verdict: Verdict::Pass,
        detail: detail.into(),
    }
}

pub fn fail(detail: impl Into<String>) -> Outcome {
    Outcome {
        verdict: Verdict::Fail,
        detail: detail.into(),
    }
}

pub fn optional(detail: impl Into<String>) -> Outcome {
    Outcome {
        verdict: Verdict::Optional,
        detail: detail.into(),
    }
}

/// Pass if `ok`, else fail, with `detail` either way.
pub fn must(ok: bool, detail: impl Into<String>) -> Outcome {
    match ok {
        true => pass(detail),
        false => fail(detail),
    }
}

/// Pass if `ok`, else optional (a MAY the proxy does not do).
pub fn may(ok: bool, detail: impl Into<String>) -> Outcome {
    match ok {
        true => pass(detail),
        false => optional(detail),
    }
}

/// Which modes a check applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    Both,
    Only(Mode),
}

/// One conformance check.
#[derive(Clone, Copy)]
pub struct Check {
    /// Stable short name (the JSON's and the docs table's key).
    pub id: &'static str,
    /// The RFC section it holds the proxy to, e.g. "RFC 9111 §4.2.1".
    pub section: &'static str,
    pub title: &'static str,
    pub applies: Applies,
    pub run: fn(&Ctx) -> Outcome,
}

impl Check {
    pub fn applies_to(&self, m: Mode) -> bool {
        match self.applies {
            Applies::Both => true,
            Applies::Only(only) => only == m,
        }
    }
}

/// A check's view of the suite: its own path prefix, the origin, the
/// proxy, and its exchange log.
pub struct Ctx {
    pub target: Target,
    origin: Arc<Origin>,
    prefix: String,
    log: Mutex<Vec<String>>,
}

impl Ctx {
    pub fn new(target: Target, origin: Arc<Origin>, prefix: String) -> Ctx {
        Ctx {
            target,
            origin,
            prefix,
            log: Mutex::new(Vec::new()),
        }
    }

    pub fn mode(&self) -> Mode {
        self.target.mode
    }

    /// This check's path for `name` (unique to the run and the check).
    pub fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.prefix)
    }

    /// Answers `name` with `f`; returns its path.
    pub fn serve(&self, name: &str, f: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> String {
        let p = self.path(name);
        self.origin.script(&p, Arc::new(f));
        p
    }

    /// Answers `name` with the same reply every time.
    pub fn fixed(&self, name: &str, r: Reply) -> String {
        self.serve(name, move |_| r.clone())
    }

    pub fn note(&self, line: impl Into<String>) {
        self.log.lock().unwrap().push(line.into());
    }

    /// Sends a request through the proxy and logs both sides.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let before = self.origin.seen(path).len();
        let hs: Vec<String> = headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        let r = client::exchange(&self.target, method, path, headers, body);
        let after = self.origin.seen(path).len();
        let mut line = format!("> {method} {path}");
        if !hs.is_empty() {
            line.push_str(&format!(" [{}]", hs.join("; ")));
        }
        self.note(line);
        for s in self.origin.seen(path).iter().skip(before) {
            let hs: Vec<String> = s.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            self.note(format!(
                "  origin saw #{}: {} [{}]",
                s.n,
                s.method,
                hs.join("; ")
            ));
        }
        if after == before {
            self.note("  origin saw nothing");
        }
        match &r.error {
            Some(e) => self.note(format!("< no response: {e}")),
            None => {
                let hs: Vec<String> = r.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
                let body = r.text();
                let body: String = body.chars().take(40).collect();
                self.note(format!("< {} [{}] {body:?}", r.status, hs.join("; ")));
            }
        }
        r
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        self.send("GET", path, headers, b"")
    }

    /// Requests the origin saw for `path`.
    pub fn count(&self, path: &str) -> usize {
        self.origin.seen(path).len()
    }

    pub fn seen(&self, path: &str) -> Vec<Seen> {
        self.origin.seen(path)
    }

    /// Waits `secs` seconds (for a freshness lifetime to run out).
    pub fn wait(&self, secs: f64) {
        self.note(format!("  (wait {secs} s)"));
        std::thread::sleep(Duration::from_secs_f64(secs));
    }

    /// Waits up to `secs` for the origin to have seen `n` requests for
    /// `path` (a background fetch); true if it did.
    pub fn wait_count(&self, path: &str, n: usize, secs: f64) -> bool {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            if self.count(path) >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.count(path) >= n
    }

    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}
