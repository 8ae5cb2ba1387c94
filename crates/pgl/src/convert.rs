//! Values converted to the type they are stored as (PGL's implicit
//! conversions: an int where a float goes, a zero where a time goes, one
//! value where an array goes, a number where a distribution goes), and
//! single-quoted constants read by their content.

use crate::ast::Span;
use crate::source::Diagnostic;
use crate::value::{Addr, Dist, DistKind, Item, Value, Q};

type R<T> = Result<T, Diagnostic>;

/// At most this many addresses from one range constant.
const MAX_RANGE: usize = 1 << 20;

fn mismatch<T>(v: &Value, ty: &str, span: Span) -> R<T> {
    Err(Diagnostic::at(
        span,
        format!("no conversion from {} to {ty}", v.type_name()),
    ))
}

fn dist_kind(ty: &str) -> Option<DistKind> {
    Some(match ty {
        "int_distr" => DistKind::Int,
        "float_distr" => DistKind::Float,
        "time_distr" => DistKind::Time,
        "size_distr" => DistKind::Size,
        _ => return None,
    })
}

fn zero(q: &Q) -> bool {
    q.param.is_none() && q.k == 0.0
}

/// `v` as a value of type `ty`.
pub fn to_type(v: Value, ty: &str, span: Span) -> R<Value> {
    if matches!(v, Value::Undef) {
        return Ok(v);
    }
    if let Some(elem) = ty.strip_suffix("[]") {
        let items = match v {
            Value::Array(items) => items,
            Value::Scheme(_) if elem == "addr" => return Ok(v),
            v => vec![Item {
                value: v,
                weight: None,
            }],
        };
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            let Value::Array(_) = it.value else {
                out.push(Item {
                    value: to_type(it.value, elem, span)?,
                    weight: it.weight,
                });
                continue;
            };
            // Nested arrays flatten; an inner item's weight is its share
            // of the outer item's.
            let Value::Array(inner) = to_type(it.value, ty, span)? else {
                unreachable!("an array converts to an array")
            };
            let n = inner.len().max(1) as f64;
            for i in inner {
                let weight = match (i.weight, it.weight) {
                    (Some(a), Some(b)) => Some(a * b),
                    (None, Some(b)) => Some(b / n),
                    (a, None) => a,
                };
                out.push(Item {
                    value: i.value,
                    weight,
                });
            }
        }
        return Ok(Value::Array(out));
    }
    Ok(match (ty, v) {
        ("int", v @ Value::Int(_)) => v,
        ("float", Value::Int(q) | Value::Float(q)) => Value::Float(q),
        ("bool", v @ Value::Bool(_)) => v,
        ("bool", Value::Int(q)) if q.param.is_none() => Value::Bool(q.k != 0.0),
        ("string", v @ Value::Str(_)) => v,
        ("time", v @ Value::Time(_))
        | ("size", v @ Value::Size(_))
        | ("rate", v @ Value::Rate(_)) => v,
        ("time", Value::Int(q)) if zero(&q) => Value::Time(q),
        ("size", Value::Int(q)) if zero(&q) => Value::Size(q),
        ("rate", Value::Int(q)) if zero(&q) => Value::Rate(q),
        ("bwidth", v @ Value::Bwidth(_)) => v,
        ("addr", v @ Value::Addr(_)) => v,
        ("PopDistr", v @ Value::Pop { .. }) => v,
        ("MimeHeader", v @ Value::MimeHeader(..)) => v,
        ("Code", v) => v,
        (t, Value::Dist(d)) if dist_kind(t) == Some(d.kind) => Value::Dist(d),
        ("time_distr", v @ Value::Qualified(..)) => v,
        (t, v) if dist_kind(t).is_some() => {
            // One value where a distribution goes: always that value.
            let kind = dist_kind(t).expect("checked");
            let x = match (&v, kind) {
                (Value::Int(q), DistKind::Int | DistKind::Float)
                | (Value::Float(q), DistKind::Float) => *q,
                (Value::Time(q), DistKind::Time) | (Value::Size(q), DistKind::Size) => *q,
                (Value::Int(q), _) if zero(q) => *q,
                _ => return mismatch(&v, t, span),
            };
            let Some(x) = x.number() else {
                return Err(Diagnostic::at(
                    span,
                    format!("a distribution of {x} (a run parameter) is not modelled"),
                ));
            };
            Value::Dist(Dist {
                kind,
                name: "const",
                args: vec![x],
            })
        }
        (t, Value::Record(r)) if r.ty == t => Value::Record(r),
        (t, v) => return mismatch(&v, t, span),
    })
}

/// A single-quoted constant by its content: `'Name: value'` a MIME
/// header, a date (two `/`), an address range (a `-`), else one address.
pub fn quoted(q: &str, span: Span) -> R<Value> {
    if let Some((n, v)) = q.split_once(": ") {
        return Ok(Value::MimeHeader(n.to_string(), v.to_string()));
    }
    if q.matches('/').count() >= 2 {
        return Err(Diagnostic::at(span, "absolute dates are not modelled"));
    }
    let addrs = expand(q).map_err(|m| Diagnostic::at(span, m))?;
    Ok(if addrs.len() == 1 && !q.contains('-') {
        Value::Addr(addrs.into_iter().next().expect("one"))
    } else {
        Value::Array(
            addrs
                .into_iter()
                .map(|a| Item {
                    value: Value::Addr(a),
                    weight: None,
                })
                .collect(),
        )
    })
}

/// `[ifname::]host[:port][/subnet]`, octets and port possibly ranges
/// `a-b`, names possibly `host[1-4].example`.
pub fn expand(text: &str) -> Result<Vec<Addr>, String> {
    let bad = || format!("{text:?} is not an address");
    // The interface and the subnet say where to put the address on a
    // host: cacheoff places addresses itself.
    let rest = match text.split_once("::") {
        Some((iface, r)) if !iface.contains('[') && !iface.is_empty() => r,
        _ => text,
    };
    let rest = rest.split('/').next().unwrap_or(rest);
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or_else(bad)?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (rest.to_string(), None),
        }
    };
    let ports: Vec<Option<u16>> = match port {
        None => vec![None],
        Some(p) => range(p)
            .ok_or_else(bad)?
            .into_iter()
            .map(|n| u16::try_from(n).map(Some).map_err(|_| bad()))
            .collect::<Result<_, _>>()?,
    };
    let hosts: Vec<String> = if host.starts_with(|c: char| c.is_ascii_digit()) {
        let octets = host
            .split('.')
            .map(|o| range(o).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        if octets.len() != 4 || octets.iter().flatten().any(|&n| n > 255) {
            return Err(bad());
        }
        let total: usize = octets.iter().map(Vec::len).product();
        if total * ports.len() > MAX_RANGE {
            return Err(format!("{text:?} names more than {MAX_RANGE} addresses"));
        }
        let mut out = vec![String::new()];
        for (i, o) in octets.iter().enumerate() {
            out = out
                .iter()
                .flat_map(|prefix| {
                    o.iter().map(move |n| {
                        if i == 0 {
                            n.to_string()
                        } else {
                            format!("{prefix}.{n}")
                        }
                    })
                })
                .collect();
        }
        out
    } else if let (Some(open), Some(close)) = (host.find('['), host.find(']')) {
        if host.starts_with('[') {
            vec![host.clone()]
        } else {
            let r = range(&host[open + 1..close]).ok_or_else(bad)?;
            if r.len() > MAX_RANGE {
                return Err(format!("{text:?} names more than {MAX_RANGE} addresses"));
            }
            r.into_iter()
                .map(|n| format!("{}{n}{}", &host[..open], &host[close + 1..]))
                .collect()
        }
    } else {
        vec![host.clone()]
    };
    Ok(hosts
        .into_iter()
        .flat_map(|h| {
            ports.iter().map(move |p| Addr {
                host: h.clone(),
                port: *p,
            })
        })
        .collect())
}

/// `7` or `1-250`.
fn range(s: &str) -> Option<Vec<u32>> {
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let n = s.parse().ok()?;
            (n, n)
        }
    };
    (a <= b && b - a < MAX_RANGE as u32).then(|| (a..=b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_ranges_expand_with_the_last_range_fastest() {
        let a = expand("lo0::10.101.0-1.1-3:80/22").unwrap();
        assert_eq!(a.len(), 6);
        assert_eq!(a[0].to_string(), "10.101.0.1:80");
        assert_eq!(a[1].to_string(), "10.101.0.2:80");
        assert_eq!(a[5].to_string(), "10.101.1.3:80");
        let p = expand("127.0.0.1:7001-7030").unwrap();
        assert_eq!((p.len(), p[29].port), (30, Some(7030)));
        let n = expand("www.host[1-4].com:8080").unwrap();
        assert_eq!(n[3].to_string(), "www.host4.com:8080");
        assert!(expand("10.0.0.256").is_err());
        assert!(expand("10.0.0").is_err());
        assert_eq!(expand("[::1]:80").unwrap()[0].to_string(), "[::1]:80");
    }
}
