//! The syntax tree of a PGL file: statements and expressions, each with
//! the place it came from, so every later error can point at it.

/// Where something is: a file of the [`crate::Sources`] and a byte range
/// in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub file: usize,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `#include "name"`.
    Include { name: String, span: Span },
    /// `Type name;`, `Type name = expr;`, `Type name = { … };`.
    Decl {
        ty: TypeName,
        name: String,
        init: Option<Init>,
        span: Span,
    },
    /// `a.b = expr;`, `a.b = { … };`.
    Assign {
        target: Path,
        value: Init,
        span: Span,
    },
    /// `[a, b: 10%, c] = expr;`.
    GroupAssign {
        targets: Vec<Item>,
        value: Expr,
        span: Span,
    },
    /// A procedure call: `use(S, R);`.
    Call(Expr),
    /// `{ … }`: a nested scope.
    Block(Vec<Stmt>),
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Option<Vec<Stmt>>,
        span: Span,
    },
    /// `every goal do { … }`: a run-time watchdog.
    Every { span: Span },
}

/// The right side of a declaration or assignment.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    Expr(Expr),
    /// Statements run against the target record.
    Block(Vec<Stmt>, Span),
}

/// A type's name, `Robot` or `addr[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeName {
    pub name: String,
    pub array: bool,
    pub span: Span,
}

/// A dotted name: a variable and the fields under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub parts: Vec<String>,
    pub span: Span,
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.parts.join("."))
    }
}

/// An item of an array (a selector when it has a weight).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub value: Expr,
    pub weight: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// `lmt`, `now` and `nmt`: the times an object's `Expires` can count from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qualifier {
    /// The last modification time.
    Lmt,
    /// The time of the reply.
    Now,
    /// The next modification time.
    Nmt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Plus,
    Minus,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Pow,
    Add,
    Sub,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Xor,
    And,
    Or,
    /// `x ** n`: n copies of x.
    Clone,
    /// `a .. b`: the integers from a to b.
    Range,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Pow => "^",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Xor => "^^",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
            BinaryOp::Clone => "**",
            BinaryOp::Range => "..",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Bool(bool),
    Int(i64),
    Float(f64),
    /// `55%`, as the fraction 0.55.
    Percent(f64),
    /// Seconds.
    Time(f64),
    /// Bytes.
    Size(f64),
    /// `"…"`, escapes resolved.
    Str(String),
    /// `'…'`: an address, an address range, a MIME header or a date,
    /// by its content.
    Quoted(String),
    /// `` `…` ``: a shell command whose output is PGL.
    Shell(String),
    Qualifier(Qualifier),
    Name(Path),
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Array(Vec<Item>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `url =~ /re/flags`.
    Regex {
        name: String,
        pattern: String,
    },
}
