//! A run PGL program in cacheoff's workload model: the TOML a workload
//! file would hold (docs/workload-files.md), so one loader validates
//! both. Every field a used object sets is either mapped here or named
//! as not modelled, with where it was set.

use crate::ast::Span;
use crate::eval::Program;
use crate::source::Diagnostic;
use crate::value::{Dist, DistKind, Field, Item, Param, Record, SchemeAddrs, Value, Q};
use toml::{Table, Value as T};

/// The workload, how addresses were mapped, and what was left out.
pub struct Lowered {
    pub table: Table,
    /// Lines saying where the file's addresses went.
    pub mapping: Vec<String>,
    /// Things said that are not errors (phases dropped, defaults taken).
    pub notes: Vec<Diagnostic>,
    pub unmodelled: Vec<Diagnostic>,
}

/// Fields a used record set, taken one by one; what is left at the end
/// is not modelled.
pub(crate) struct Taker {
    rec: Record,
    what: String,
}

impl Taker {
    pub(crate) fn new(rec: &Record, what: impl Into<String>) -> Taker {
        let mut rec = rec.clone();
        rec.fields.retain(|_, f| !matches!(f.value, Value::Undef));
        Taker {
            rec,
            what: what.into(),
        }
    }

    pub(crate) fn take(&mut self, name: &str) -> Option<Field> {
        self.rec.fields.remove(name)
    }

    pub(crate) fn value(&mut self, name: &str) -> Option<(Value, Span)> {
        self.take(name).map(|f| (f.value, f.span))
    }

    /// Whatever was not taken: each a field cacheoff does not model.
    pub(crate) fn rest(self, out: &mut Vec<Diagnostic>) {
        for (name, f) in self.rec.fields {
            let detail = match &f.value {
                Value::Record(r) if !r.fields.is_empty() => {
                    let inner: Vec<&str> = r.fields.keys().map(String::as_str).collect();
                    format!(" ({})", inner.join(", "))
                }
                _ => String::new(),
            };
            out.push(Diagnostic::at(
                f.span,
                format!("{}.{name}{detail} is not modelled", self.what),
            ));
        }
    }
}

pub fn lower(p: &Program, file_stem: &str) -> Result<Lowered, Diagnostic> {
    let mut l = Lowering {
        t: Table::new(),
        mapping: Vec::new(),
        notes: Vec::new(),
        unmodelled: p.unmodelled.clone(),
    };
    l.t.insert("name".into(), T::String(file_stem.to_string()));
    l.t.insert(
        "description".into(),
        T::String(format!("imported from Web Polygraph's {file_stem}.pg")),
    );
    l.run(p)?;
    Ok(Lowered {
        table: l.t,
        mapping: l.mapping,
        notes: l.notes,
        unmodelled: l.unmodelled,
    })
}

pub(crate) struct Lowering {
    pub(crate) t: Table,
    pub(crate) mapping: Vec<String>,
    pub(crate) notes: Vec<Diagnostic>,
    pub(crate) unmodelled: Vec<Diagnostic>,
}

pub(crate) fn err<T>(span: Span, m: impl Into<String>) -> Result<T, Diagnostic> {
    Err(Diagnostic::at(span, m))
}

/// A plain number of a quantity (parameters are not numbers here).
pub(crate) fn plain(q: Q, span: Span, what: &str) -> Result<f64, Diagnostic> {
    q.number()
        .ok_or_else(|| Diagnostic::at(span, format!("{what} cannot be {q}")))
}

/// `0.55` for a float or int field.
pub(crate) fn fraction(v: &Value, span: Span, what: &str) -> Result<f64, Diagnostic> {
    match v {
        // Percentages are decimal: 72.37% is 0.7237, not a binary neighbour.
        Value::Float(q) | Value::Int(q) => plain(*q, span, what).map(round_share),
        v => err(span, format!("{what} is a {}, not a number", v.type_name())),
    }
}

pub(crate) fn fmt_secs(s: f64) -> String {
    for (unit, n) in [("day", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0)] {
        if s >= n && (s / n).fract() == 0.0 {
            return format!("{}{unit}", s / n);
        }
    }
    if s >= 1.0 {
        format!("{s}s")
    } else {
        format!("{}ms", s * 1000.0)
    }
}

pub(crate) fn fmt_bytes(b: f64) -> String {
    if b >= 1024.0 && (b / 1024.0 * 1000.0).fract() == 0.0 {
        format!("{}KB", b / 1024.0)
    } else {
        format!("{b}B")
    }
}

/// A distribution in cacheoff's text form: `exp(4.5KB)`, `zipf(64)`.
fn dist(d: &Dist) -> String {
    let arg = |x: f64| match d.kind {
        DistKind::Time => fmt_secs(x),
        DistKind::Size => fmt_bytes(x),
        _ => format!("{x}"),
    };
    if d.name == "table" {
        let bins: Vec<String> = d
            .args
            .chunks(2)
            .map(|b| format!("{} {}", arg(b[0]), b[1]))
            .collect();
        return format!("table({})", bins.join(", "));
    }
    let args: Vec<String> = d.args.iter().map(|&x| arg(x)).collect();
    format!("{}({})", d.name, args.join(","))
}

pub(crate) fn dist_of(v: &Value, span: Span, what: &str) -> Result<String, Diagnostic> {
    match v {
        Value::Dist(d) => Ok(dist(d)),
        v => err(
            span,
            format!("{what} is a {}, not a distribution", v.type_name()),
        ),
    }
}

pub(crate) fn record(v: &Value) -> Option<&Record> {
    match v {
        Value::Record(r) => Some(r),
        _ => None,
    }
}

/// Weighted items as (item, share): unweighted ones split what is left.
pub(crate) fn shares(items: &[Item]) -> Vec<(Value, f64)> {
    let given: f64 = items.iter().filter_map(|i| i.weight).sum();
    let free = items.iter().filter(|i| i.weight.is_none()).count();
    let rest = if free > 0 {
        ((1.0 - given) / free as f64).max(0.0)
    } else {
        0.0
    };
    let total = given + rest * free as f64;
    items
        .iter()
        .map(|i| {
            let w = i.weight.unwrap_or(rest);
            (i.value.clone(), if total > 0.0 { w / total } else { 0.0 })
        })
        .collect()
}

pub(crate) fn table<'a>(t: &'a mut Table, key: &str) -> &'a mut Table {
    t.entry(key.to_string())
        .or_insert_with(|| T::Table(Table::new()))
        .as_table_mut()
        .expect("a table")
}

impl Lowering {
    fn run(&mut self, p: &Program) -> Result<(), Diagnostic> {
        let mut robots = Vec::new();
        let mut servers = Vec::new();
        let mut bench = None;
        let mut bench_at = Span::default();
        let mut pipes = Vec::new();
        for (v, span) in &p.used {
            match v {
                Value::Record(r) if r.ty == "Robot" => robots.push((r.clone(), *span)),
                Value::Record(r) if r.ty == "Server" => servers.push((r.clone(), *span)),
                Value::Record(r) if r.ty == "Bench" => {
                    bench = Some(r.clone());
                    bench_at = *span;
                }
                Value::Record(r) if r.ty == "NetPipe" => pipes.push((r.clone(), *span)),
                Value::Record(r) if r.ty == "AddrMap" => {
                    self.notes.push(Diagnostic::at(
                        *span,
                        "the address map's names stand for its servers: cacheoff names them itself",
                    ));
                }
                v => self.unmodelled.push(Diagnostic::at(
                    *span,
                    format!("use() of a {} is not modelled", v.type_name()),
                )),
            }
        }
        let (robot, rspan) = only_one(&robots, "robot")?;
        let (server, sspan) = only_one(&servers, "server")?;
        self.params(p);
        self.peak_left_open(bench.as_ref(), bench_at);
        self.server(server, sspan, bench.as_ref())?;
        self.robot(robot, rspan, bench.as_ref())?;
        for (pipe, span) in &pipes {
            self.pipe(pipe, *span, robot, server)?;
        }
        self.working_set(p)?;
        self.phases(p)?;
        Ok(())
    }

    fn params(&mut self, p: &Program) {
        for (param, v, _) in &p.params {
            let (key, text) = match (param, v) {
                (Param::Peak, Value::Rate(q)) => {
                    ("peak_rate", q.number().map(|r| format!("{r}/s")))
                }
                (Param::FillRate, Value::Rate(q)) => {
                    ("fill_rate", q.number().map(|r| format!("{r}/s")))
                }
                (Param::CacheSize, Value::Size(q)) => ("cache_size", q.number().map(fmt_bytes)),
                _ => continue,
            };
            if let Some(text) = text {
                self.t.insert(key.into(), T::String(text));
            }
        }
    }

    /// A bench without a peak rate leaves it to the command line.
    fn peak_left_open(&mut self, bench: Option<&Record>, span: Span) {
        if bench.is_some() && !self.t.contains_key("peak_rate") {
            self.notes.push(Diagnostic::at(
                span,
                "the bench's peak_req_rate is undefined: --rate sets it (cacheoff's default is 400/s)",
            ));
        }
    }

    fn robot(&mut self, r: &Record, span: Span, bench: Option<&Record>) -> Result<(), Diagnostic> {
        let mut f = Taker::new(r, "Robot");
        let robots = table(&mut self.t, "robots");
        f.take("kind");
        // Where robots come from: a scheme (the count follows the peak
        // rate) or a list (the count is its length).
        let mut rate = match f.value("req_rate") {
            Some((Value::Rate(q), s)) => Some(plain(q, s, "Robot.req_rate")?),
            Some((v, s)) => return err(s, format!("Robot.req_rate is a {}", v.type_name())),
            None => None,
        };
        // Equal gaps instead of a Poisson stream.
        match f.value("req_inter_arrival") {
            Some((Value::Dist(d), _)) if d.name == "const" && d.args[0] > 0.0 => {
                robots.insert("arrivals".into(), T::String("constant".into()));
                rate = Some(1.0 / d.args[0]);
            }
            Some((_, s)) => self.unmodelled.push(Diagnostic::at(
                s,
                "req_inter_arrival other than a positive const() is not modelled",
            )),
            None => {}
        }
        match f.value("addresses") {
            Some((Value::Scheme(s), _)) => {
                let side = side_of(&s, "client_side");
                let agent = side.as_ref().and_then(|x| x.get("max_agent_load").cloned());
                let host = side.as_ref().and_then(|x| x.get("max_host_load").cloned());
                let per_robot = match (rate, agent) {
                    (Some(r), _) => r,
                    (None, Some(Value::Rate(q))) => plain(q, span, "max_agent_load")?,
                    _ => {
                        return err(
                            span,
                            "robots need a req_rate (or the bench's max_agent_load)",
                        )
                    }
                };
                robots.insert("rate".into(), T::String(format!("{per_robot}/s")));
                robots.insert("max_count".into(), T::Integer(1_000_000));
                if let Some(Value::Rate(q)) = host {
                    if let Some(h) = q.number() {
                        let per_host = (h / per_robot).round() as i64;
                        robots.insert("per_host".into(), T::Integer(per_host));
                        self.mapping.push(format!(
                            "client hosts: {per_host} robots each (max_host_load {h}/s), each with its own working set (robots.per_host)"
                        ));
                    }
                }
                self.mapping.push(format!(
                    "robots: {}'s addresses -> 127.1.0.1 and up, one per robot; count = peak rate / {per_robot}/s",
                    s.scheme
                ));
            }
            Some((Value::Array(items), _)) => {
                let n = items.len() as i64;
                robots.insert("count".into(), T::Integer(n));
                if let Some(r) = rate {
                    // The file's total rate, unless its bench says.
                    if bench.is_none() && !self.t.contains_key("peak_rate") {
                        self.t
                            .insert("peak_rate".into(), T::String(format!("{}/s", r * n as f64)));
                    }
                }
                let first = match items.first().map(|i| &i.value) {
                    Some(Value::Addr(a)) => format!(" from {a}"),
                    _ => String::new(),
                };
                self.mapping
                    .push(format!("robots: {n} addresses{first} -> 127.1.0.1 and up"));
            }
            Some((v, s)) => return err(s, format!("Robot.addresses is a {}", v.type_name())),
            None => return err(span, "the robot has no addresses"),
        }
        let robots = table(&mut self.t, "robots");
        if let Some((v, s)) = f.value("pconn_use_lmt") {
            robots.insert(
                "conn_reuse".into(),
                T::String(dist_of(&v, s, "pconn_use_lmt")?),
            );
        }
        if let Some((Value::Int(q), s)) = f.value("open_conn_lmt") {
            robots.insert(
                "max_conns".into(),
                T::Integer(plain(q, s, "open_conn_lmt")? as i64),
            );
        }
        if let Some((v, s)) = f.value("http_versions") {
            robots.insert("http10".into(), T::Boolean(http10(&v, s)?));
        }
        // Robots asking the bench's proxy as their origin: a surrogate.
        if let Some((origins, _)) = f.value("origins") {
            let proxy = bench
                .and_then(|b| record(&b.fields.get("proxy_side")?.value))
                .and_then(|side| side.get("hosts"));
            if proxy == Some(&origins) {
                self.t.insert("surrogate".into(), T::Boolean(true));
                self.mapping.push(
                    "robots ask the bench's proxy_side hosts as their origin servers: a surrogate workload".into(),
                );
            }
        }
        let pop = table(&mut self.t, "popularity");
        if let Some((v, s)) = f.value("recurrence") {
            pop.insert(
                "recurrence".into(),
                T::Float(fraction(&v, s, "recurrence")?),
            );
        }
        if let Some((v, s)) = f.value("embed_recur") {
            if fraction(&v, s, "embed_recur")? != 1.0 {
                self.unmodelled.push(Diagnostic::at(
                    s,
                    "embed_recur below 100% is not modelled (robots fetch every embedded object)",
                ));
            }
        }
        if let Some(Field {
            value: Value::Record(pm),
            span: _,
        }) = f.take("pop_model")
        {
            self.pop_model(&pm)?;
        }
        self.requests(&mut f)?;
        if let Some((v, s)) = f.value("abort_prob") {
            table(&mut self.t, "aborts")
                .insert("robot".into(), T::Float(fraction(&v, s, "abort_prob")?));
        }
        if let Some((Value::Array(items), s)) = f.value("interests") {
            let public = shares(&items)
                .into_iter()
                .all(|(v, w)| w == 0.0 || matches!(v, Value::Str(ref x) if x == "public"));
            if !public {
                self.unmodelled.push(Diagnostic::at(
                    s,
                    "private and foreign interests are not modelled (every object is public)",
                ));
            }
        }
        if let Some((_, s)) = f.value("dns_resolver") {
            self.notes.push(Diagnostic::at(
                s,
                "Robot.dns_resolver: cacheoff's robots reach servers by address, no resolver is needed",
            ));
        }
        f.rest(&mut self.unmodelled);
        Ok(())
    }

    /// A network pipe on the robots' or the servers' addresses: that
    /// side's WAN link (delay each way, loss).
    fn pipe(
        &mut self,
        pipe: &Record,
        span: Span,
        robot: &Record,
        server: &Record,
    ) -> Result<(), Diagnostic> {
        let mut f = Taker::new(pipe, "NetPipe");
        f.take("kind");
        let at = f.value("addresses").map(|(v, _)| v);
        let side = if at.as_ref() == robot.get("addresses") {
            "robots"
        } else if at.as_ref() == server.get("addresses") {
            "servers"
        } else {
            return err(
                span,
                "a NetPipe on addresses other than the robots' or the servers' is not modelled",
            );
        };
        let mut link = Table::new();
        match f.value("packet_delay") {
            Some((Value::Dist(d), _)) if d.name == "const" => {
                link.insert("delay".into(), T::String(fmt_secs(d.args[0])));
            }
            Some((v, s)) => {
                return err(
                    s,
                    format!("packet_delay {v:?}: only a constant delay is modelled"),
                )
            }
            None => {
                link.insert("delay".into(), T::String("0s".into()));
            }
        }
        if let Some((v, s)) = f.value("packet_loss") {
            link.insert("loss".into(), T::Float(fraction(&v, s, "packet_loss")?));
        }
        f.rest(&mut self.unmodelled);
        table(&mut self.t, side).insert("link".into(), T::Table(link));
        self.mapping.push(format!(
            "{side}: the NetPipe's delay and loss -> {side}.link"
        ));
        Ok(())
    }

    fn working_set(&mut self, p: &Program) -> Result<(), Diagnostic> {
        if let Some((v, s)) = &p.working_set_cap {
            let pop = table(&mut self.t, "popularity");
            if let Some((total, object)) = p.working_set_bytes {
                pop.insert("working_set_size".into(), T::String(fmt_bytes(total)));
                pop.insert(
                    "working_set_object_size".into(),
                    T::String(fmt_bytes(object)),
                );
                return Ok(());
            }
            match v {
                // A multiple of the peak rate: that many seconds of it.
                Value::Int(q) | Value::Float(q) if q.param == Some(Param::Peak) => {
                    pop.insert("working_set_time".into(), T::String(fmt_secs(q.k.round())));
                }
                Value::Int(q) => {
                    pop.insert(
                        "working_set_cap".into(),
                        T::Integer(plain(*q, *s, "working_set_cap")? as i64),
                    );
                }
                v => return err(*s, format!("working_set_cap() of a {}", v.type_name())),
            }
        }
        if let Some((_, s)) = &p.working_set_length {
            self.unmodelled.push(Diagnostic::at(
                *s,
                "working_set_length() is not modelled (use working_set_cap())",
            ));
        }
        Ok(())
    }
}

/// The one used agent of a kind; cacheoff runs one kind of robot and one
/// of server.
fn only_one<'a>(used: &'a [(Record, Span)], kind: &str) -> Result<(&'a Record, Span), Diagnostic> {
    match used {
        [(r, span)] => Ok((r, *span)),
        _ => err(
            used.get(1).map_or(Span::default(), |u| u.1),
            format!(
                "cacheoff runs one kind of {kind}; the file uses {}",
                used.len()
            ),
        ),
    }
}

pub(crate) fn round_share(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// `["1.0"]` speaks HTTP/1.0 with keep-alive; `["1.1"]` HTTP/1.1.
pub(crate) fn http10(v: &Value, span: Span) -> Result<bool, Diagnostic> {
    let Value::Array(items) = v else {
        return err(span, "http_versions is a list");
    };
    match items.as_slice() {
        [Item {
            value: Value::Str(s),
            ..
        }] if s == "1.0" => Ok(true),
        [Item {
            value: Value::Str(s),
            ..
        }] if s == "1.1" => Ok(false),
        _ => err(
            span,
            "a mix of HTTP versions is not modelled (one of \"1.0\" or \"1.1\")",
        ),
    }
}

/// A side of a scheme's bench (`client_side`, `server_side`).
pub(crate) fn side_of(s: &SchemeAddrs, side: &str) -> Option<Record> {
    record(s.bench.fields.get(side).map(|f| &f.value)?).cloned()
}
