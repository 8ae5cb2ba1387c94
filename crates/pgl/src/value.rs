//! PGL values. Quantities may stand for a multiple of a run parameter
//! that the file leaves to the user (the peak request rate, the cache
//! size, the fill rate), so a workload keeps its scaling rules instead of
//! one evaluation of them: `2 * ProxyCacheSize` stays "twice the cache".

use crate::ast::Qualifier;
use std::collections::BTreeMap;
use std::fmt;

/// A run parameter a quantity can be a multiple of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Param {
    /// The peak request rate (`Bench.peak_req_rate`), a rate.
    Peak,
    /// The cache's size, a size.
    CacheSize,
    /// The fill phase's request rate, a rate.
    FillRate,
    /// The fill rate's share of the peak (fill rate ÷ peak rate).
    FillShare,
    /// One over the peak rate: a number over a count of robots that
    /// follows the peak (`1.0 / count(R.addresses)`, one robot's share).
    InvPeak,
}

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::Peak => "the peak request rate",
            Param::CacheSize => "the cache size",
            Param::FillRate => "the fill rate",
            Param::FillShare => "the fill rate's share of the peak",
            Param::InvPeak => "one over the peak request rate",
        }
    }
}

/// A number, or a multiple of a run parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Q {
    pub k: f64,
    pub param: Option<Param>,
}

impl Q {
    pub fn plain(k: f64) -> Q {
        Q { k, param: None }
    }

    pub fn of(param: Param) -> Q {
        Q {
            k: 1.0,
            param: Some(param),
        }
    }

    /// Its value when it is a plain number.
    pub fn number(self) -> Option<f64> {
        self.param.is_none().then_some(self.k)
    }

    pub fn scale(self, by: f64) -> Q {
        Q {
            k: self.k * by,
            param: self.param,
        }
    }
}

impl fmt::Display for Q {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.param {
            None => write!(f, "{}", self.k),
            Some(p) => write!(f, "{} x {}", self.k, p.name()),
        }
    }
}

/// The kind of a distribution's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistKind {
    Int,
    Float,
    Time,
    Size,
}

/// A distribution as PGL writes it; arguments in seconds, bytes or plain
/// numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Dist {
    pub kind: DistKind,
    /// `const`, `unif`, `exp`, `norm`, `logn`, `zipf`, `seq`.
    pub name: &'static str,
    pub args: Vec<f64>,
}

/// An address or a name, with its optional parts (`lo0::10.1.1.1:80/22`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr {
    pub host: String,
    pub port: Option<u16>,
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// One item of an array, with its selection weight when it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub value: Value,
    pub weight: Option<f64>,
}

/// A record (Robot, Server, Content, …): the fields set so far; a field
/// not here has Polygraph's default.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub ty: &'static str,
    pub fields: BTreeMap<String, Field>,
}

/// A field's value and where it was set.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub value: Value,
    pub span: crate::ast::Span,
}

impl Record {
    pub fn new(ty: &'static str) -> Record {
        Record {
            ty,
            fields: BTreeMap::new(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields
            .get(name)
            .map(|f| &f.value)
            .filter(|v| !matches!(v, Value::Undef))
    }
}

/// Addresses an address scheme gives a bench's robots or servers:
/// counted by the scheme's rule from the bench's loads.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeAddrs {
    /// `PolyMix3As`, `PolyMix4As`, `WebAxe4As`, …
    pub scheme: &'static str,
    pub side: Side,
    pub bench: Record,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Robots,
    Servers,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `undef()`, or declared and never set: Polygraph's default.
    Undef,
    Bool(bool),
    Int(Q),
    Float(Q),
    Str(String),
    /// Seconds.
    Time(Q),
    /// Bytes.
    Size(Q),
    /// Per second.
    Rate(Q),
    /// Bytes per second.
    Bwidth(f64),
    Addr(Addr),
    /// Addresses counted by an address scheme.
    Scheme(SchemeAddrs),
    Dist(Dist),
    /// `nmt + const(0sec)`: a time distribution counted from a qualifier.
    Qualified(Qualifier, Option<Dist>),
    /// `popUnif()` or `popZipf(skew)`.
    Pop {
        zipf: Option<f64>,
    },
    MimeHeader(String, String),
    Array(Vec<Item>),
    Record(Record),
}

impl Value {
    /// The type's name in messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Undef => "undefined",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Time(_) => "time",
            Value::Size(_) => "size",
            Value::Rate(_) => "rate",
            Value::Bwidth(_) => "bwidth",
            Value::Addr(_) | Value::Scheme(_) => "addr",
            Value::Dist(d) => match d.kind {
                DistKind::Int => "int_distr",
                DistKind::Float => "float_distr",
                DistKind::Time => "time_distr",
                DistKind::Size => "size_distr",
            },
            Value::Qualified(..) => "time_distr",
            Value::Pop { .. } => "PopDistr",
            Value::MimeHeader(..) => "MimeHeader",
            Value::Array(_) => "array",
            Value::Record(r) => r.ty,
        }
    }
}
