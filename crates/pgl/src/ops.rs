//! PGL's operators on values: numbers, times, sizes, rates and
//! bandwidths with the unit rules of the language (`400/sec` is a rate,
//! a rate times a time is a count), arrays, booleans, and quantities that
//! are multiples of a run parameter (linear only: a parameter times a
//! number, never a parameter times another).

use crate::ast::{BinaryOp, Span, UnaryOp};
use crate::source::Diagnostic;
use crate::value::{Item, Param, Value, Q};

type R<T> = Result<T, Diagnostic>;

/// The most items one array may have.
pub const MAX_ITEMS: usize = 1_000_000;

fn err<T>(span: Span, m: impl Into<String>) -> R<T> {
    Err(Diagnostic::at(span, m))
}

fn undefined(span: Span) -> Diagnostic {
    Diagnostic::at(span, "this value is not defined (undef() or never set)")
}

fn add(a: Q, b: Q, span: Span) -> R<Q> {
    if a.param == b.param {
        return Ok(Q {
            k: a.k + b.k,
            param: a.param,
        });
    }
    match (a.k == 0.0, b.k == 0.0) {
        (true, _) => Ok(b),
        (_, true) => Ok(a),
        _ => err(
            span,
            format!("cannot add {a} and {b}: the sum has no rule cacheoff can keep"),
        ),
    }
}

fn mul(a: Q, b: Q, span: Span) -> R<Q> {
    match (a.param, b.param) {
        (None, _) => Ok(b.scale(a.k)),
        (_, None) => Ok(a.scale(b.k)),
        _ => err(span, format!("cannot multiply {a} by {b}")),
    }
}

fn div(a: Q, b: Q, span: Span) -> R<Q> {
    if b.k == 0.0 {
        return err(span, "division by zero");
    }
    match (a.param, b.param) {
        (_, None) => Ok(a.scale(1.0 / b.k)),
        (x, y) if x == y => Ok(Q::plain(a.k / b.k)),
        (Some(Param::FillRate), Some(Param::Peak)) => Ok(Q {
            k: a.k / b.k,
            param: Some(Param::FillShare),
        }),
        (None, Some(Param::Peak)) => Ok(Q {
            k: a.k / b.k,
            param: Some(Param::InvPeak),
        }),
        _ => err(
            span,
            format!("cannot divide {a} by {b}: the result has no rule cacheoff can keep"),
        ),
    }
}

/// A plain number, for what must be known while the file is read.
fn known(q: Q, span: Span) -> R<f64> {
    q.number().ok_or_else(|| {
        Diagnostic::at(
            span,
            format!(
                "{q}: {} is only known when the test runs, and this needs a number",
                q.param.map_or("", |p| p.name())
            ),
        )
    })
}

/// A selection weight or probability: a plain fraction.
pub fn fraction(v: Value, span: Span) -> R<f64> {
    match v {
        Value::Float(q) | Value::Int(q) => known(q, span),
        v => err(
            span,
            format!(
                "a weight is a number or a percentage, not {}",
                v.type_name()
            ),
        ),
    }
}

pub fn unary(op: UnaryOp, v: Value, span: Span) -> R<Value> {
    Ok(match (op, v) {
        (UnaryOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (
            UnaryOp::Plus,
            v
            @ (Value::Int(_) | Value::Float(_) | Value::Time(_) | Value::Size(_) | Value::Rate(_)),
        ) => v,
        (UnaryOp::Minus, Value::Int(q)) => Value::Int(q.scale(-1.0)),
        (UnaryOp::Minus, Value::Float(q)) => Value::Float(q.scale(-1.0)),
        (UnaryOp::Minus, Value::Time(q)) => Value::Time(q.scale(-1.0)),
        (UnaryOp::Minus, Value::Size(q)) => Value::Size(q.scale(-1.0)),
        (UnaryOp::Minus, Value::Rate(q)) => Value::Rate(q.scale(-1.0)),
        (_, Value::Undef) => return Err(undefined(span)),
        (op, v) => return err(span, format!("no {op:?} for {}", v.type_name())),
    })
}

/// Numbers of either kind: ints stay ints only with ints.
fn numeric(v: &Value) -> Option<(Q, bool)> {
    match v {
        Value::Int(q) => Some((*q, true)),
        Value::Float(q) => Some((*q, false)),
        _ => None,
    }
}

pub fn binary(op: BinaryOp, a: Value, b: Value, span: Span) -> R<Value> {
    use BinaryOp::*;
    use Value::*;
    if matches!(a, Undef) || matches!(b, Undef) {
        return Err(undefined(span));
    }
    match op {
        And | Or | Xor => {
            return match (a, b) {
                (Bool(x), Bool(y)) => Ok(Bool(match op {
                    And => x && y,
                    Or => x || y,
                    _ => x ^ y,
                })),
                (x, y) => err(
                    span,
                    format!(
                        "{} needs bools, not {} and {}",
                        op.symbol(),
                        x.type_name(),
                        y.type_name()
                    ),
                ),
            }
        }
        Lt | Le | Gt | Ge | Eq | Ne => return compare(op, a, b, span),
        Clone => return clone(a, b, span),
        Range => {
            let (Int(x), Int(y)) = (&a, &b) else {
                return err(span, "`..` makes a range of ints");
            };
            let (x, y) = (known(*x, span)? as i64, known(*y, span)? as i64);
            if x.abs_diff(y) >= MAX_ITEMS as u64 {
                return err(span, "a range of more than a million ints");
            }
            let step = if y >= x { 1 } else { -1 };
            let mut items = Vec::new();
            let mut i = x;
            loop {
                items.push(Item {
                    value: Int(Q::plain(i as f64)),
                    weight: None,
                });
                if i == y {
                    break;
                }
                i += step;
            }
            return Ok(Array(items));
        }
        _ => {}
    }
    // Arrays: `+` concatenates or appends.
    if op == Add {
        if let Array(mut xs) = a {
            let more = match &b {
                Array(ys) => ys.len(),
                _ => 1,
            };
            if xs.len() + more > MAX_ITEMS {
                return err(span, format!("an array of more than {MAX_ITEMS} items"));
            }
            match b {
                Array(ys) => xs.extend(ys),
                y => xs.push(Item {
                    value: y,
                    weight: None,
                }),
            }
            return Ok(Array(xs));
        }
        // A qualified time distribution: `nmt + const(0sec)`.
        if let Qualified(q, None) = a {
            return match b {
                Dist(d) if d.kind == crate::value::DistKind::Time => Ok(Qualified(q, Some(d))),
                Time(t) => Ok(Qualified(
                    q,
                    Some(crate::value::Dist {
                        kind: crate::value::DistKind::Time,
                        name: "const",
                        args: vec![known(t, span)?],
                    }),
                )),
                y => err(
                    span,
                    format!(
                        "lmt, now and nmt take a time distribution, not {}",
                        y.type_name()
                    ),
                ),
            };
        }
    }
    if let (Some((x, xi)), Some((y, yi))) = (numeric(&a), numeric(&b)) {
        let ints = xi && yi;
        let q = match op {
            Add => add(x, y, span)?,
            Sub => add(x, y.scale(-1.0), span)?,
            Mul => mul(x, y, span)?,
            Div => {
                let q = div(x, y, span)?;
                // Ints divide in floating point and drop the fraction.
                if ints && q.param.is_none() {
                    Q::plain(q.k.trunc())
                } else {
                    q
                }
            }
            Rem => {
                let (x, y) = (known(x, span)?, known(y, span)?);
                if !ints || y == 0.0 {
                    return err(span, "`%` takes two ints, the second not 0");
                }
                Q::plain(x % y)
            }
            Pow => Q::plain(known(x, span)?.powf(known(y, span)?)),
            _ => unreachable!(),
        };
        return Ok(if ints && op != Pow {
            Int(q)
        } else if ints {
            Int(Q::plain(q.k.trunc()))
        } else {
            Float(q)
        });
    }
    let num = |v: &Value| numeric(v).map(|(q, _)| q);
    Ok(match (op, a, b) {
        (Add, Time(x), Time(y)) => Time(add(x, y, span)?),
        (Sub, Time(x), Time(y)) => Time(add(x, y.scale(-1.0), span)?),
        (Add, Size(x), Size(y)) => Size(add(x, y, span)?),
        (Sub, Size(x), Size(y)) => Size(add(x, y.scale(-1.0), span)?),
        (Add, Rate(x), Rate(y)) => Rate(add(x, y, span)?),
        (Sub, Rate(x), Rate(y)) => Rate(add(x, y.scale(-1.0), span)?),
        (Div, Time(x), Time(y)) | (Div, Size(x), Size(y)) | (Div, Rate(x), Rate(y)) => {
            Float(div(x, y, span)?)
        }
        (Mul, Time(x), n) | (Mul, n, Time(x)) if num(&n).is_some() => {
            Time(mul(x, num(&n).unwrap(), span)?)
        }
        (Mul, Size(x), n) | (Mul, n, Size(x)) if num(&n).is_some() => {
            Size(mul(x, num(&n).unwrap(), span)?)
        }
        (Mul, Rate(x), n) | (Mul, n, Rate(x)) if num(&n).is_some() => {
            Rate(mul(x, num(&n).unwrap(), span)?)
        }
        (Div, Time(x), n) if num(&n).is_some() => Time(div(x, num(&n).unwrap(), span)?),
        (Div, Size(x), n) if num(&n).is_some() => Size(div(x, num(&n).unwrap(), span)?),
        (Div, Rate(x), n) if num(&n).is_some() => Rate(div(x, num(&n).unwrap(), span)?),
        // A count per time is a rate; a count per rate is a time.
        (Div, n, Time(t)) if num(&n).is_some() => Rate(div(num(&n).unwrap(), t, span)?),
        (Div, n, Rate(r)) if num(&n).is_some() => Time(div(num(&n).unwrap(), r, span)?),
        // A rate over a time is a count.
        (Mul, Rate(r), Time(t)) | (Mul, Time(t), Rate(r)) => Float(mul(r, t, span)?),
        (Div, Size(s), Time(t)) => Bwidth(known(s, span)? / known(t, span)?),
        (Mul, Size(s), Rate(r)) | (Mul, Rate(r), Size(s)) => {
            Bwidth(known(s, span)? * known(r, span)?)
        }
        (Div, Size(s), Bwidth(b)) => Time(Q::plain(known(s, span)? / b)),
        (Mul, Bwidth(b), Time(t)) | (Mul, Time(t), Bwidth(b)) => {
            Size(Q::plain(b * known(t, span)?))
        }
        (Mul, Bwidth(b), n) | (Mul, n, Bwidth(b)) if num(&n).is_some() => {
            Bwidth(b * known(num(&n).unwrap(), span)?)
        }
        (Div, Bwidth(b), n) if num(&n).is_some() => Bwidth(b / known(num(&n).unwrap(), span)?),
        (Add, Str(x), Str(y)) => Str(x + &y),
        (op, x, y) => {
            return err(
                span,
                format!(
                    "no `{}` between {} and {}",
                    op.symbol(),
                    x.type_name(),
                    y.type_name()
                ),
            )
        }
    })
}

fn compare(op: BinaryOp, a: Value, b: Value, span: Span) -> R<Value> {
    use std::cmp::Ordering;
    use Value::*;
    let ord = match (&a, &b) {
        (Int(x), Int(y))
        | (Time(x), Time(y))
        | (Size(x), Size(y))
        | (Rate(x), Rate(y))
        | (Float(x), Float(y))
        | (Int(x), Float(y))
        | (Float(x), Int(y)) => {
            if matches!((&a, &b), (Float(_), _) | (_, Float(_)))
                && matches!(op, BinaryOp::Eq | BinaryOp::Ne)
            {
                return err(span, "floats cannot be compared with == or !=");
            }
            known(*x, span)?.partial_cmp(&known(*y, span)?)
        }
        (Str(x), Str(y)) if matches!(op, BinaryOp::Eq | BinaryOp::Ne) => Some(x.cmp(y)),
        (Bool(x), Bool(y)) if matches!(op, BinaryOp::Eq | BinaryOp::Ne) => Some(x.cmp(y)),
        _ => {
            return err(
                span,
                format!("cannot compare {} and {}", a.type_name(), b.type_name()),
            )
        }
    };
    let Some(o) = ord else {
        return err(span, "not comparable");
    };
    Ok(Bool(match op {
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::Le => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        BinaryOp::Ge => o != Ordering::Less,
        BinaryOp::Eq => o == Ordering::Equal,
        _ => o != Ordering::Equal,
    }))
}

/// `x ** n`: an array of n copies of x (of its items, for an array).
fn clone(a: Value, b: Value, span: Span) -> R<Value> {
    let Value::Int(n) = b else {
        return err(span, "`**` repeats by an int");
    };
    let n = known(n, span)?;
    if !(0.0..=1_000_000.0).contains(&n) {
        return err(span, "`**` repeats 0 to a million times");
    }
    let one = match a {
        Value::Array(items) => items,
        v => vec![Item {
            value: v,
            weight: None,
        }],
    };
    if one.len() as f64 * n > MAX_ITEMS as f64 {
        return err(span, format!("an array of more than {MAX_ITEMS} items"));
    }
    Ok(Value::Array(
        std::iter::repeat_n(one, n as usize).flatten().collect(),
    ))
}
