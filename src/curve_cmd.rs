//! `cacheoff curve`: a trace's (or a workload plan's) hit ratios against
//! cache size — an infinite cache's, exact byte-weighted LRU's at every
//! size in one pass, FIFO's and S3-FIFO's simulated at each
//! (`cacheoff_trace::curve`).

use crate::cli::CurveArgs;
use crate::Failure;
use anyhow::anyhow;
use cacheoff_base::Bytes;
use cacheoff_run::console;
use cacheoff_trace::curve::{self, Survey};
use cacheoff_trace::{Format, Record, TraceReader};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// Sizes a range or the default spans.
const SIZES: usize = 12;

pub fn run(a: &CurveArgs) -> Result<(), Failure> {
    let input = Input::parse(a)?;
    let sizes = match &a.sizes {
        Some(spec) => parse_sizes(spec)?,
        None => {
            let (_, fp) = curve::footprint(input.records()?);
            input.failed()?;
            curve::log_sizes(fp / 1000, fp, SIZES)
        }
    };
    let s = curve::survey(input.records()?, &sizes);
    input.failed()?;
    if a.json {
        console::print(&json(&s).to_string());
    } else {
        console::print(&table(&s));
    }
    Ok(())
}

/// A trace file, or a workload's plan.
enum Input {
    Trace(
        std::path::PathBuf,
        Option<Format>,
        Rc<RefCell<Option<cacheoff_trace::TraceError>>>,
    ),
    Plan(Box<cacheoff_workload::Workload>),
}

impl Input {
    fn parse(a: &CurveArgs) -> Result<Input, Failure> {
        let path = Path::new(&a.input);
        let workload_file = path.extension().is_some_and(|e| e == "toml" || e == "pg");
        if path.is_file() && !workload_file {
            let format = a
                .format
                .as_deref()
                .map(|f| Format::parse(f, a.columns.as_deref()))
                .transpose()
                .map_err(Failure::usage)?;
            return Ok(Input::Trace(path.to_path_buf(), format, Rc::default()));
        }
        let w = cacheoff_run::workload::load(&a.input, &Default::default(), &Default::default())?;
        Ok(Input::Plan(Box::new(w)))
    }

    /// Its records from the start, read again for every pass (streamed: a
    /// trace is never held); a malformed line ends the pass, and
    /// [`Input::failed`] says so.
    fn records(&self) -> Result<Box<dyn Iterator<Item = Record>>, Failure> {
        match self {
            Input::Trace(path, format, failed) => {
                let reader = TraceReader::open(path, format.clone()).map_err(Failure::usage)?;
                let failed = failed.clone();
                Ok(Box::new(reader.map_while(move |r| {
                    r.map_err(|e| *failed.borrow_mut() = Some(e)).ok()
                })))
            }
            Input::Plan(w) => Ok(Box::new(
                crate::sample_trace::PlanTrace::new(w, usize::MAX)
                    .map(|r| r.expected(&Format::Squid)),
            )),
        }
    }

    /// The malformed line a pass stopped at.
    fn failed(&self) -> Result<(), Failure> {
        match self {
            Input::Trace(_, _, failed) => match failed.borrow_mut().take() {
                Some(e) => Err(Failure::usage(e)),
                None => Ok(()),
            },
            Input::Plan(_) => Ok(()),
        }
    }
}

/// `A,B,C` or `A..B` (log-spaced).
fn parse_sizes(spec: &str) -> Result<Vec<u64>, Failure> {
    let bytes = |s: &str| {
        s.trim()
            .parse::<Bytes>()
            .map(|b| b.0)
            .map_err(|e| Failure::usage(anyhow!("--sizes {spec:?}: {s:?}: {e}")))
    };
    let sizes = match spec.split_once("..") {
        Some((a, b)) => curve::log_sizes(bytes(a)?, bytes(b)?, SIZES),
        None => spec.split(',').map(bytes).collect::<Result<_, _>>()?,
    };
    if sizes.is_empty() {
        return Err(Failure::usage(anyhow!("--sizes {spec:?}: no size")));
    }
    Ok(sizes)
}

fn json(s: &Survey) -> serde_json::Value {
    serde_json::json!({
        "requests": s.requests,
        "objects": s.objects,
        "footprint_bytes": s.footprint_bytes,
        "sizes": s.lru.sizes,
        "curves": {
            "infinite": {"rhr": s.infinite.0, "bhr": s.infinite.1},
            "lru": {"rhr": s.lru.rhr, "bhr": s.lru.bhr},
            "fifo": {"rhr": s.fifo.rhr, "bhr": s.fifo.bhr},
            "s3fifo": {"rhr": s.s3fifo.rhr, "bhr": s.s3fifo.bhr},
        },
    })
}

fn table(s: &Survey) -> String {
    let mut out = format!(
        "{} requests, {} objects, footprint {}\ninfinite cache: {:.2}% of requests, {:.2}% of bytes\n\nhit ratio, % of requests / % of bytes\n{:>12}  {:>15}  {:>15}  {:>15}\n",
        s.requests,
        s.objects,
        Bytes(s.footprint_bytes),
        s.infinite.0,
        s.infinite.1,
        "cache size",
        "LRU",
        "FIFO",
        "S3-FIFO"
    );
    for (i, size) in s.lru.sizes.iter().enumerate() {
        let pair = |c: &cacheoff_trace::curve::Curve| format!("{:.2} / {:.2}", c.rhr[i], c.bhr[i]);
        out.push_str(&format!(
            "{:>12}  {:>15}  {:>15}  {:>15}\n",
            Bytes(*size).to_string(),
            pair(&s.lru),
            pair(&s.fifo),
            pair(&s.s3fifo)
        ));
    }
    out
}
