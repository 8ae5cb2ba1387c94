//! PGL's built-in calls: distributions, conversions, address schemes,
//! and the procedures that say what the test uses.

use crate::ast::{Expr, ExprKind, Span};
use crate::eval::{Interp, R};
use crate::source::Diagnostic;
use crate::value::{Dist, DistKind, Item, Param, SchemeAddrs, Side, Value, Q};
use cacheoff_workload::MAX_TABLE_ENTRIES;

fn err<T>(span: Span, m: impl Into<String>) -> R<T> {
    Err(Diagnostic::at(span, m))
}

/// A call's name and arguments.
fn parts(e: &Expr) -> (&str, &[Expr]) {
    match &e.kind {
        ExprKind::Call { name, args } => (name, args),
        _ => unreachable!("a call"),
    }
}

/// A plain number argument (seconds for times, bytes for sizes).
fn number(v: &Value, span: Span) -> R<f64> {
    match v {
        Value::Int(q) | Value::Float(q) | Value::Time(q) | Value::Size(q) | Value::Rate(q) => q
            .number()
            .ok_or_else(|| Diagnostic::at(span, format!("{q} is only known when the test runs"))),
        v => err(span, format!("a number, not {}", v.type_name())),
    }
}

/// Items of an array, nested arrays flattened.
fn flat(v: &Value, out: &mut Vec<Item>) {
    match v {
        Value::Array(items) => {
            for i in items {
                match &i.value {
                    Value::Array(_) => flat(&i.value, out),
                    _ => out.push(i.clone()),
                }
            }
        }
        v => out.push(Item {
            value: v.clone(),
            weight: None,
        }),
    }
}

impl Interp<'_> {
    fn args(&mut self, args: &[Expr]) -> R<Vec<Value>> {
        args.iter().map(|a| self.eval(a)).collect()
    }

    /// A call in an expression.
    pub(crate) fn call_function(&mut self, e: &Expr) -> R<Value> {
        let (name, args) = parts(e);
        let span = e.span;
        let vals = self.args(args)?;
        let want = |n: usize| -> R<()> {
            if vals.len() == n {
                Ok(())
            } else {
                err(
                    span,
                    format!("{name}() takes {n} argument(s), not {}", vals.len()),
                )
            }
        };
        Ok(match name {
            "const" | "exp" | "unif" | "norm" | "logn" | "zipf" | "seq" => {
                let n = match name {
                    "const" | "exp" | "zipf" | "seq" => 1,
                    _ => 2,
                };
                want(n)?;
                let kind = match (&vals[0], name) {
                    (_, "zipf" | "seq") => DistKind::Int,
                    (Value::Time(_), _) => DistKind::Time,
                    (Value::Size(_), _) => DistKind::Size,
                    (Value::Int(_), _) => DistKind::Int,
                    (Value::Float(_), _) => DistKind::Float,
                    (v, _) => return err(span, format!("{name}() of {}", v.type_name())),
                };
                let mut a = Vec::with_capacity(n);
                for (v, x) in vals.iter().zip(args) {
                    a.push(number(v, x.span)?);
                }
                Value::Dist(Dist {
                    kind,
                    name: match name {
                        "const" => "const",
                        "exp" => "exp",
                        "unif" => "unif",
                        "norm" => "norm",
                        "logn" => "logn",
                        "zipf" => "zipf",
                        _ => "seq",
                    },
                    args: a,
                })
            }
            "table" => {
                let (Some(Value::Str(file)), kind) = (vals.first(), vals.get(1)) else {
                    return err(span, "table() takes a file name and, optionally, its type");
                };
                let named = self.find_file(file, span)?;
                let kind = match kind {
                    Some(Value::Str(k)) => Some(k.as_str()),
                    _ => None,
                };
                Value::Dist(
                    table(&named.text, kind, named.quotable).map_err(|m| {
                        Diagnostic::at(span, format!("{}: {m}", named.path.display()))
                    })?,
                )
            }
            "popUnif" => {
                want(0)?;
                Value::Pop { zipf: None }
            }
            "popZipf" => {
                want(1)?;
                Value::Pop {
                    zipf: Some(number(&vals[0], span)?),
                }
            }
            "undef" => {
                want(0)?;
                Value::Undef
            }
            "int" => {
                want(1)?;
                match &vals[0] {
                    Value::Int(q) => Value::Int(*q),
                    Value::Float(q) => Value::Int(match q.param {
                        // A multiple of a parameter is kept exact.
                        Some(_) => *q,
                        None => Q::plain(q.k.trunc()),
                    }),
                    Value::Str(s) => match s.trim().parse::<i64>() {
                        Ok(n) => Value::Int(Q::plain(n as f64)),
                        Err(_) => return err(span, format!("{s:?} is not an int")),
                    },
                    v => return err(span, format!("int() of {}", v.type_name())),
                }
            }
            "float" => {
                want(1)?;
                match &vals[0] {
                    Value::Int(q) | Value::Float(q) => Value::Float(*q),
                    v => return err(span, format!("float() of {}", v.type_name())),
                }
            }
            "count" => {
                want(1)?;
                match &vals[0] {
                    Value::Scheme(s) => scheme_count(s, span)?,
                    v => {
                        let mut items = Vec::new();
                        flat(v, &mut items);
                        Value::Int(Q::plain(items.len() as f64))
                    }
                }
            }
            "min" | "max" => {
                if vals.is_empty() {
                    return err(span, format!("{name}() needs an argument"));
                }
                let mut best = vals[0].clone();
                for v in &vals[1..] {
                    let op = if name == "min" {
                        crate::ast::BinaryOp::Lt
                    } else {
                        crate::ast::BinaryOp::Gt
                    };
                    if crate::ops::binary(op, v.clone(), best.clone(), span)? == Value::Bool(true) {
                        best = v.clone();
                    }
                }
                best
            }
            // cacheoff runs every robot as one client host, so a share
            // per host is the whole.
            "clientHostCount" => {
                want(1)?;
                Value::Int(Q::plain(1.0))
            }
            "robotAddrs" | "serverAddrs" => {
                want(2)?;
                let scheme = match &vals[0] {
                    Value::Record(r) if r.ty.ends_with("As") => r.ty,
                    v => {
                        return err(
                            args[0].span,
                            format!("an address scheme, not {}", v.type_name()),
                        )
                    }
                };
                let Value::Record(bench) = &vals[1] else {
                    return err(args[1].span, "a Bench");
                };
                if bench.ty != "Bench" {
                    return err(args[1].span, format!("a Bench, not {}", bench.ty));
                }
                Value::Scheme(SchemeAddrs {
                    scheme,
                    side: if name == "robotAddrs" {
                        Side::Robots
                    } else {
                        Side::Servers
                    },
                    bench: bench.clone(),
                })
            }
            // Names stand for the addresses they map to: cacheoff names its
            // origin servers itself.
            "ipsToNames" | "setAddrPort" => {
                want(2)?;
                vals[0].clone()
            }
            f => return err(span, format!("{f}() is not modelled")),
        })
    }

    /// A call as a statement.
    pub(crate) fn call_procedure(&mut self, e: &Expr) -> R<()> {
        let (name, args) = parts(e);
        let span = e.span;
        match name {
            "use" => {
                for a in args {
                    let v = self.eval(a)?;
                    let mut items = Vec::new();
                    flat(&v, &mut items);
                    for i in items {
                        self.charge(&i.value, a.span)?;
                        self.program.used.push((i.value, a.span));
                    }
                }
            }
            "schedule" => {
                for a in args {
                    let v = self.eval(a)?;
                    let mut items = Vec::new();
                    flat(&v, &mut items);
                    for i in items {
                        match i.value {
                            Value::Record(r) if r.ty == "Phase" => {
                                self.program.phases.push((r, a.span))
                            }
                            Value::Record(r) if r.ty == "StatsSample" => {}
                            v => {
                                return err(
                                    a.span,
                                    format!("schedule() takes phases, not {}", v.type_name()),
                                )
                            }
                        }
                    }
                }
            }
            "working_set_length" | "working_set_cap" => {
                let [a] = args else {
                    return err(span, format!("{name}() takes one argument"));
                };
                if name == "working_set_cap" {
                    self.program.working_set_bytes = self.byte_cap(a)?;
                }
                let v = self.eval(a)?;
                let slot = if name == "working_set_length" {
                    &mut self.program.working_set_length
                } else {
                    &mut self.program.working_set_cap
                };
                *slot = Some((v, a.span));
            }
            "print" => {
                let mut line = String::new();
                for a in args {
                    let v = self.eval(a)?;
                    line.push_str(&match v {
                        Value::Str(s) => s,
                        v => format!("{v:?}"),
                    });
                }
                self.program
                    .notes
                    .push(Diagnostic::at(span, format!("print: {line}")));
            }
            "note_substitutes" => self.unmodelled(span, "note_substitutes() is not modelled"),
            _ => {
                self.call_function(e)?;
            }
        }
        Ok(())
    }
}

impl Interp<'_> {
    /// `int(SIZE / OBJECT_SIZE / clientHostCount(…))`, Polygraph's way of
    /// capping the working set by bytes: the two sizes, so the cap keeps
    /// its rule.
    fn byte_cap(&mut self, e: &Expr) -> R<Option<(f64, f64)>> {
        let inner = match &e.kind {
            ExprKind::Call { name, args } if name == "int" && args.len() == 1 => &args[0],
            _ => e,
        };
        let mut cur = inner;
        let mut divisors = Vec::new();
        while let ExprKind::Binary(crate::ast::BinaryOp::Div, a, b) = &cur.kind {
            divisors.push(b.as_ref());
            cur = a;
        }
        let Some(first) = divisors.pop() else {
            return Ok(None);
        };
        let (Value::Size(total), Value::Size(object)) = (self.eval(cur)?, self.eval(first)?) else {
            return Ok(None);
        };
        for d in divisors {
            if self.eval(d)? != Value::Int(Q::plain(1.0)) {
                return Ok(None);
            }
        }
        Ok(total.number().zip(object.number()))
    }
}

/// How many addresses a scheme gives: robots are the peak rate over each
/// robot's load (a multiple of the peak); servers are not a multiple of
/// anything (PolyMix's 0.1 per robot + 500), so cannot be counted here.
fn scheme_count(s: &SchemeAddrs, span: Span) -> R<Value> {
    if s.side == Side::Servers {
        return err(
            span,
            "counting a scheme's servers is not modelled (they follow the robots' count)",
        );
    }
    let load = s
        .bench
        .fields
        .get("client_side")
        .and_then(|f| match &f.value {
            Value::Record(side) => side.get("max_agent_load").cloned(),
            _ => None,
        });
    match load {
        Some(Value::Rate(q)) if q.param.is_none() && q.k > 0.0 => Ok(Value::Int(Q {
            k: 1.0 / q.k,
            param: Some(Param::Peak),
        })),
        _ => err(
            span,
            "the bench's client_side.max_agent_load must be a rate to count its robots",
        ),
    }
}

/// A table distribution's file: a header `int_distr|size_distr|time_distr
/// NAME = {`, then `value weight` lines (values in bytes and seconds),
/// then `}`; `#` starts a comment. The type may also come from the call.
/// Errors quote the file's text only when `quote` (a file under the
/// workload's directory).
fn table(text: &str, kind: Option<&str>, quote: bool) -> Result<Dist, String> {
    let mut header = None;
    let mut args = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line == "}" {
            continue;
        }
        if header.is_none() && line.ends_with('{') {
            header = line.split_whitespace().next().map(str::to_string);
            continue;
        }
        if args.len() >= 2 * MAX_TABLE_ENTRIES {
            return Err(format!(
                "line {}: more than {MAX_TABLE_ENTRIES} entries",
                i + 1
            ));
        }
        let mut w = line.split_whitespace();
        let (Some(v), Some(f), None) = (w.next(), w.next(), w.next()) else {
            return Err(format!("line {}: `value weight` expected", i + 1));
        };
        let num = |s: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| match quote {
                    true => format!(
                        "line {}: {s:?} is not a number (wildcards are not modelled)",
                        i + 1
                    ),
                    false => format!("line {}: not a number", i + 1),
                })
        };
        args.push(num(v)?);
        args.push(num(f)?);
    }
    if args.is_empty() {
        return Err("an empty table".into());
    }
    let kind = match kind.or(header.as_deref()) {
        Some("size" | "size_distr") => DistKind::Size,
        Some("time" | "time_distr") => DistKind::Time,
        Some("float" | "float_distr") => DistKind::Float,
        Some("int" | "int_distr") | None => DistKind::Int,
        Some(other) if quote => return Err(format!("{other:?} is not a table type")),
        Some(_) => return Err("not a table type".into()),
    };
    Ok(Dist {
        kind,
        name: "table",
        args,
    })
}
