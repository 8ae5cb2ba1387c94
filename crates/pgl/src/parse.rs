//! PGL text to a syntax tree ([`crate::ast`]), with pest (`pgl.pest`).

use crate::ast::*;
use crate::source::{Diagnostic, Sources};
use pest::iterators::Pair;
use pest::Parser as _;

#[derive(pest_derive::Parser)]
#[grammar = "pgl.pest"]
struct PglParser;

/// Parses file `file` of `sources` into its statements.
pub fn parse(sources: &Sources, file: usize) -> Result<Vec<Stmt>, Diagnostic> {
    let text = sources.text(file);
    let mut pairs = PglParser::parse(Rule::file, text)
        .map_err(|e| Diagnostic::from_pest(sources, file, e.renamed_rules(rule_name)))?;
    let b = Builder { file };
    let root = pairs.next().expect("a file");
    let mut stmts = Vec::new();
    for p in root.into_inner() {
        if !matches!(p.as_rule(), Rule::EOI | Rule::semi) {
            if let Some(s) = b.stmt(p)? {
                stmts.push(s);
            }
        }
    }
    Ok(stmts)
}

/// Names of rules in "expected …" messages, as a user would say them.
fn rule_name(r: &Rule) -> String {
    match r {
        Rule::EOI => "end of file",
        Rule::stmt | Rule::simple | Rule::decl | Rule::assign | Rule::group_assign => "a statement",
        Rule::empty | Rule::semi => "`;`",
        Rule::include => "`#include`",
        Rule::block => "`{`",
        Rule::expr
        | Rule::clone_expr
        | Rule::or_expr
        | Rule::and_expr
        | Rule::xor_expr
        | Rule::not_expr
        | Rule::eq_expr
        | Rule::cmp_expr
        | Rule::add_expr
        | Rule::neg_expr
        | Rule::mul_expr
        | Rule::primary
        | Rule::signed => "an expression",
        Rule::clone_op => "`**` or `..`",
        Rule::or_op => "`||`",
        Rule::and_op => "`&&`",
        Rule::xor_op => "`^^`",
        Rule::not_op => "`!`",
        Rule::eq_op => "`==` or `!=`",
        Rule::cmp_op => "a comparison",
        Rule::add_op | Rule::sign => "`+` or `-`",
        Rule::mul_op => "`*`, `/`, `%` or `^`",
        Rule::ident | Rule::word | Rule::callee | Rule::field | Rule::obj_name => "a name",
        Rule::type_name => "a type",
        Rule::array_suffix => "`[]`",
        Rule::call => "a call",
        Rule::array | Rule::items | Rule::item => "an array",
        Rule::paren => "`(`",
        Rule::number => "a number",
        Rule::percent => "a percentage",
        Rule::time | Rule::time_unit => "a time",
        Rule::size | Rule::size_unit => "a size",
        Rule::boolean => "a truth value",
        Rule::qualifier => "`lmt`, `now` or `nmt`",
        Rule::dq_string => "a string",
        Rule::sq_string => "a quoted address",
        Rule::bq_string => "a command",
        Rule::regex | Rule::regex_match => "a regular expression",
        Rule::reserved => "a reserved word",
        Rule::if_stmt => "`if`",
        Rule::every_stmt => "`every`",
        Rule::file => "a PGL file",
        Rule::WHITESPACE | Rule::COMMENT | Rule::line_comment | Rule::block_comment => "a comment",
        Rule::word_char => "a letter",
        Rule::mul_operand => "an operand",
    }
    .to_string()
}

struct Builder {
    file: usize,
}

type R<T> = Result<T, Diagnostic>;

impl Builder {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span {
            file: self.file,
            start: s.start(),
            end: s.end(),
        }
    }

    fn stmts(&self, p: Pair<Rule>) -> R<Vec<Stmt>> {
        let mut out = Vec::new();
        for s in p.into_inner().filter(|s| s.as_rule() != Rule::semi) {
            if let Some(s) = self.stmt(s)? {
                out.push(s);
            }
        }
        Ok(out)
    }

    fn stmt(&self, p: Pair<Rule>) -> R<Option<Stmt>> {
        let span = self.span(&p);
        Ok(Some(match p.as_rule() {
            Rule::empty => return Ok(None),
            Rule::include => {
                let s = p.into_inner().next().expect("a name");
                Stmt::Include {
                    name: unquote(s.as_str()),
                    span,
                }
            }
            Rule::block => Stmt::Block(self.stmts(p)?),
            Rule::if_stmt => {
                let mut it = p.into_inner();
                let cond = self.expr(it.next().expect("a condition"))?;
                let then = self.stmts(it.next().expect("a block"))?;
                let otherwise = it.next().map(|b| self.stmts(b)).transpose()?;
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                    span,
                }
            }
            Rule::every_stmt => Stmt::Every { span },
            Rule::decl => {
                let mut it = p.into_inner();
                let ty = it.next().expect("a type");
                let ty_span = self.span(&ty);
                let mut ty_parts = ty.into_inner();
                let name = ty_parts.next().expect("a type name").as_str().to_string();
                let array = ty_parts.next().is_some();
                let var = it.next().expect("a name").as_str().to_string();
                let init = it.next().map(|v| self.init(v)).transpose()?;
                Stmt::Decl {
                    ty: TypeName {
                        name,
                        array,
                        span: ty_span,
                    },
                    name: var,
                    init,
                    span,
                }
            }
            Rule::assign => {
                let mut it = p.into_inner();
                let target = self.path(it.next().expect("a target"));
                let value = self.init(it.next().expect("a value"))?;
                Stmt::Assign {
                    target,
                    value,
                    span,
                }
            }
            Rule::group_assign => {
                let mut targets = Vec::new();
                let mut value = None;
                for q in p.into_inner() {
                    match q.as_rule() {
                        Rule::items => targets = self.items(q)?,
                        _ => value = Some(self.expr(q)?),
                    }
                }
                Stmt::GroupAssign {
                    targets,
                    value: value.expect("a value"),
                    span,
                }
            }
            Rule::call => Stmt::Call(self.expr(p)?),
            r => unreachable!("statement {r:?}"),
        }))
    }

    fn init(&self, p: Pair<Rule>) -> R<Init> {
        Ok(match p.as_rule() {
            Rule::block => {
                let span = self.span(&p);
                Init::Block(self.stmts(p)?, span)
            }
            _ => Init::Expr(self.expr(p)?),
        })
    }

    fn path(&self, p: Pair<Rule>) -> Path {
        let span = self.span(&p);
        Path {
            parts: p.into_inner().map(|q| q.as_str().to_string()).collect(),
            span,
        }
    }

    fn items(&self, p: Pair<Rule>) -> R<Vec<Item>> {
        p.into_inner()
            .map(|item| {
                let mut it = item.into_inner();
                let value = self.expr(it.next().expect("a value"))?;
                let weight = it.next().map(|w| self.expr(w)).transpose()?;
                Ok(Item { value, weight })
            })
            .collect()
    }

    fn expr(&self, p: Pair<Rule>) -> R<Expr> {
        let span = self.span(&p);
        let kind = match p.as_rule() {
            // Levels with one child pass it on; with more, fold left.
            Rule::expr => return self.expr(p.into_inner().next().expect("an expression")),
            Rule::clone_expr
            | Rule::or_expr
            | Rule::and_expr
            | Rule::xor_expr
            | Rule::eq_expr
            | Rule::cmp_expr
            | Rule::add_expr
            | Rule::mul_expr => return self.fold(p),
            Rule::not_expr | Rule::neg_expr | Rule::signed => {
                let mut it = p.into_inner();
                let first = it.next().expect("an operand");
                match first.as_rule() {
                    Rule::not_op | Rule::sign => {
                        let op = match first.as_str() {
                            "-" => UnaryOp::Minus,
                            "+" => UnaryOp::Plus,
                            _ => UnaryOp::Not,
                        };
                        let operand = self.expr(it.next().expect("an operand"))?;
                        ExprKind::Unary(op, Box::new(operand))
                    }
                    _ => return self.expr(first),
                }
            }
            Rule::paren => return self.expr(p.into_inner().next().expect("an expression")),
            Rule::array => match p.into_inner().next() {
                Some(items) => ExprKind::Array(self.items(items)?),
                None => ExprKind::Array(Vec::new()),
            },
            Rule::call => {
                let mut it = p.into_inner();
                let name = it.next().expect("a name").as_str().to_string();
                let args = it.map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                ExprKind::Call { name, args }
            }
            Rule::regex_match => {
                let mut it = p.into_inner();
                let name = it.next().expect("a name").as_str().to_string();
                let pattern = it.next().expect("a pattern").as_str().to_string();
                ExprKind::Regex { name, pattern }
            }
            Rule::number => number(p.as_str(), span)?,
            Rule::percent => {
                let n = p.as_str().trim_end_matches('%');
                ExprKind::Percent(float(n, span)? / 100.0)
            }
            Rule::time => {
                let (n, unit) = split_unit(p.as_str());
                let scale = match unit {
                    "msec" | "ms" => 0.001,
                    "sec" | "s" => 1.0,
                    "min" => 60.0,
                    "hour" | "hr" => 3600.0,
                    "day" => 86400.0,
                    "year" => 365.0 * 86400.0,
                    u => unreachable!("time unit {u}"),
                };
                ExprKind::Time(count(n, span)? * scale)
            }
            Rule::size => {
                let (n, unit) = split_unit(p.as_str());
                let n = count(n, span)?;
                let bytes = match unit {
                    "bit" => {
                        if n % 8.0 != 0.0 {
                            return Err(Diagnostic::at(
                                span,
                                format!("{n} bits is not a whole number of bytes"),
                            ));
                        }
                        n / 8.0
                    }
                    "Byte" => n,
                    "KB" => n * 1024.0,
                    "Kb" => n * 128.0,
                    "MB" => n * 1048576.0,
                    "Mb" => n * 131072.0,
                    "GB" => n * 1073741824.0,
                    "Gb" => n * 134217728.0,
                    u => unreachable!("size unit {u}"),
                };
                // Fractions of a byte are dropped, as Polygraph does.
                ExprKind::Size(bytes.floor())
            }
            Rule::boolean => ExprKind::Bool(matches!(p.as_str(), "yes" | "true" | "on")),
            Rule::qualifier => ExprKind::Qualifier(match p.as_str() {
                "lmt" => Qualifier::Lmt,
                "now" => Qualifier::Now,
                _ => Qualifier::Nmt,
            }),
            Rule::dq_string => ExprKind::Str(unquote(p.as_str())),
            Rule::sq_string => {
                let s = p.as_str();
                ExprKind::Quoted(s[1..s.len() - 1].to_string())
            }
            Rule::bq_string => {
                let s = p.as_str();
                ExprKind::Shell(s[1..s.len() - 1].to_string())
            }
            Rule::obj_name => ExprKind::Name(self.path(p)),
            r => unreachable!("expression {r:?}"),
        };
        Ok(Expr { kind, span })
    }

    /// `a op b op c …`, left to right.
    fn fold(&self, p: Pair<Rule>) -> R<Expr> {
        let mut it = p.into_inner();
        let mut left = self.expr(it.next().expect("an operand"))?;
        while let Some(op) = it.next() {
            let right = self.expr(it.next().expect("an operand"))?;
            let op = match op.as_str() {
                "*" => BinaryOp::Mul,
                "/" => BinaryOp::Div,
                "%" => BinaryOp::Rem,
                "^" => BinaryOp::Pow,
                "+" => BinaryOp::Add,
                "-" => BinaryOp::Sub,
                "<" => BinaryOp::Lt,
                "<=" => BinaryOp::Le,
                ">" => BinaryOp::Gt,
                ">=" => BinaryOp::Ge,
                "==" => BinaryOp::Eq,
                "!=" => BinaryOp::Ne,
                "^^" => BinaryOp::Xor,
                "&&" => BinaryOp::And,
                "||" => BinaryOp::Or,
                "**" => BinaryOp::Clone,
                ".." => BinaryOp::Range,
                o => unreachable!("operator {o}"),
            };
            let span = Span {
                file: left.span.file,
                start: left.span.start,
                end: right.span.end,
            };
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                span,
            };
        }
        Ok(left)
    }
}

/// A literal number: an integer when it has neither a point nor an
/// exponent.
fn number(s: &str, span: Span) -> R<ExprKind> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .map(ExprKind::Int)
            .map_err(|_| Diagnostic::at(span, format!("{s} is too large an integer")));
    }
    Ok(ExprKind::Float(float(s, span)?))
}

fn float(s: &str, span: Span) -> R<f64> {
    s.parse::<f64>()
        .map_err(|_| Diagnostic::at(span, format!("{s} is not a number")))
}

/// The number before a unit; none is one of the unit.
fn count(s: &str, span: Span) -> R<f64> {
    if s.is_empty() {
        Ok(1.0)
    } else {
        float(s, span)
    }
}

/// `13KB` → (`13`, `KB`).
fn split_unit(s: &str) -> (&str, &str) {
    let i = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .or_else(|| s.find(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or(s.len());
    s.split_at(i)
}

/// A double-quoted string's text: a backslash keeps the character after it.
fn unquote(s: &str) -> String {
    let inner = &s[1..s.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}
