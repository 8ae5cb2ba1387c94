//! Running a PGL file: declarations, assignments (values are copied,
//! never shared), blocks that edit a record in place, `#include`s, and
//! the procedures that say what the test uses (`use`, `schedule`,
//! `working_set_*`). The result is a [`Program`]: what was used, with
//! where each thing was said.

use crate::ast::{Expr, ExprKind, Init, Item as AstItem, Path, Span, Stmt};
use crate::source::{Diagnostic, Sources};
use crate::types;
use crate::value::{Field, Item, Param, Record, Value, Q};
use cacheoff_workload::files::{Files, Named};
use std::collections::HashMap;

/// What a PGL file asks for, once run.
#[derive(Debug, Default)]
pub struct Program {
    /// `use()`d objects, in order, with where they were used.
    pub used: Vec<(Value, Span)>,
    /// `schedule()`d phases, in order.
    pub phases: Vec<(Record, Span)>,
    /// `working_set_length(t)`.
    pub working_set_length: Option<(Value, Span)>,
    /// `working_set_cap(n)`.
    pub working_set_cap: Option<(Value, Span)>,
    /// The working-set cap as bytes of objects of a size, when the file
    /// writes it so (`int(WSS / 11KB / …)`).
    pub working_set_bytes: Option<(f64, f64)>,
    /// The run parameters the file gives values to (the peak rate, the
    /// cache size, the fill rate), with where.
    pub params: Vec<(Param, Value, Span)>,
    /// Things said that are not errors.
    pub notes: Vec<Diagnostic>,
    /// Constructs cacheoff does not model, met while running the file.
    pub unmodelled: Vec<Diagnostic>,
    /// The top-level variables' values once the file ran.
    pub globals: std::collections::BTreeMap<String, Value>,
}

/// A declared variable.
#[derive(Debug, Clone)]
struct Var {
    ty: String,
    value: Value,
    /// The run parameter this variable stands for, if any.
    param: Option<Param>,
}

pub(crate) type R<T> = Result<T, Diagnostic>;

pub struct Interp<'s> {
    pub(crate) sources: &'s mut Sources,
    /// What `#include` and `table()` may read: the including file's
    /// directory, then the `--include` directories in order, within the
    /// workload's directory and the `--include` places.
    files: &'s Files,
    /// Global variables, then one map per nested `{ }` scope.
    scopes: Vec<HashMap<String, Var>>,
    /// Paths of the records being edited by `name = { … }` blocks.
    ctx: Vec<Vec<String>>,
    depth: usize,
    /// Items and fields stored so far, against [`MAX_STORED`].
    stored: u64,
    pub(crate) program: Program,
}

/// The most array items and record fields one import may store, all
/// values together (values are copied: a million-item array assigned a
/// thousand times would hold a billion).
pub const MAX_STORED: u64 = 16_000_000;

/// The deepest nesting of `#include`s, as Polygraph allows.
const MAX_INCLUDE_DEPTH: usize = 256;

impl<'s> Interp<'s> {
    pub fn new(sources: &'s mut Sources, files: &'s Files) -> Interp<'s> {
        Interp {
            sources,
            files,
            scopes: vec![HashMap::new()],
            ctx: Vec::new(),
            depth: 0,
            stored: 0,
            program: Program::default(),
        }
    }

    pub fn finish(mut self) -> Program {
        let globals = self.scopes.swap_remove(0);
        self.program.globals = globals
            .into_iter()
            .map(|(name, var)| {
                let v = match var.param {
                    Some(p) => crate::params::symbol(p),
                    None => var.value,
                };
                (name, v)
            })
            .collect();
        self.program
    }

    /// Runs a file's statements.
    pub fn run(&mut self, stmts: &[Stmt]) -> R<()> {
        for s in stmts {
            self.exec(s)?;
        }
        Ok(())
    }

    /// Counts a value about to be kept, refusing one past [`MAX_STORED`].
    pub(crate) fn charge(&mut self, v: &Value, span: Span) -> R<()> {
        fn size(v: &Value, budget: u64) -> u64 {
            let mut n = 1;
            match v {
                Value::Array(items) => {
                    for i in items {
                        n += size(&i.value, budget);
                        if n > budget {
                            break;
                        }
                    }
                }
                Value::Record(r) => {
                    for f in r.fields.values() {
                        n += size(&f.value, budget);
                        if n > budget {
                            break;
                        }
                    }
                }
                _ => {}
            }
            n
        }
        self.stored += size(v, MAX_STORED);
        if self.stored > MAX_STORED {
            return Err(Diagnostic::at(
                span,
                format!("the file keeps more than {MAX_STORED} values and fields in all"),
            ));
        }
        Ok(())
    }

    pub(crate) fn unmodelled(&mut self, span: Span, what: impl Into<String>) {
        self.program.unmodelled.push(Diagnostic::at(span, what));
    }

    fn exec(&mut self, s: &Stmt) -> R<()> {
        match s {
            Stmt::Include { name, span } => self.include(name, *span),
            Stmt::Decl {
                ty,
                name,
                init,
                span,
            } => self.declare(ty, name, init.as_ref(), *span),
            Stmt::Assign {
                target,
                value,
                span,
            } => self.assign(target, value, *span),
            Stmt::GroupAssign {
                targets,
                value,
                span,
            } => self.group_assign(targets, value, *span),
            Stmt::Call(call) => {
                self.call_procedure(call)?;
                Ok(())
            }
            Stmt::Block(body) => {
                self.scopes.push(HashMap::new());
                let r = self.run(body);
                self.scopes.pop();
                r
            }
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => match self.eval(cond)? {
                Value::Bool(true) => self.run(then),
                Value::Bool(false) => otherwise.as_ref().map_or(Ok(()), |o| self.run(o)),
                v => Err(Diagnostic::at(
                    cond.span,
                    format!("an if needs a bool, not {}", v.type_name()),
                )),
            },
            Stmt::Every { span } => {
                self.unmodelled(
                    *span,
                    "`every … do`: run-time watchdogs (Phase.script) are not modelled",
                );
                Ok(())
            }
        }
    }

    fn include(&mut self, name: &str, span: Span) -> R<()> {
        if self.depth >= MAX_INCLUDE_DEPTH {
            return Err(Diagnostic::at(span, "#include nested too deep"));
        }
        let named = self.find_file(name, span)?;
        let file = self
            .sources
            .add_named(named.path, named.text, named.quotable);
        let stmts = crate::parse::parse(self.sources, file)?;
        self.depth += 1;
        let r = self.run(&stmts);
        self.depth -= 1;
        r
    }

    /// A file named in the file at `span`: next to that file, then in the
    /// include directories, in order; only from where it may be read.
    pub(crate) fn find_file(&self, name: &str, span: Span) -> R<Named> {
        let here = self.sources.path(span.file).parent();
        self.files
            .find(here, name)
            .map_err(|e| Diagnostic::at(span, e.to_string()))
    }

    fn declare(
        &mut self,
        ty: &crate::ast::TypeName,
        name: &str,
        init: Option<&Init>,
        span: Span,
    ) -> R<()> {
        let base = ty.name.as_str();
        if !types::is_type(base) {
            return Err(Diagnostic::at(ty.span, format!("unknown type `{base}`")));
        }
        if self.scopes.last().is_some_and(|s| s.contains_key(name)) {
            return Err(Diagnostic::at(span, format!("`{name}` is declared twice")));
        }
        let full = if ty.array {
            format!("{base}[]")
        } else {
            base.to_string()
        };
        let fresh = match (types::record(base), ty.array) {
            (Some(t), false) => Value::Record(Record::new(t.name)),
            _ => Value::Undef,
        };
        let param = (self.scopes.len() == 1)
            .then(|| crate::params::by_name(name, &full))
            .flatten();
        self.scopes.last_mut().expect("a scope").insert(
            name.to_string(),
            Var {
                ty: full.clone(),
                value: fresh,
                param,
            },
        );
        if let Some(init) = init {
            let target = Path {
                parts: vec![name.to_string()],
                span,
            };
            self.assign(&target, init, span)?;
        }
        Ok(())
    }

    fn assign(&mut self, target: &Path, value: &Init, span: Span) -> R<()> {
        let path = self.resolve_target(target)?;
        match value {
            Init::Expr(e) => {
                let v = self.eval(e)?;
                self.store(&path, v, span)
            }
            Init::Block(body, _) => {
                // A block edits the record in place (fields keep what they
                // had); names inside it are first its own fields.
                match self.load(&path, target.span)? {
                    Value::Record(_) => {}
                    Value::Undef => {
                        let ty = self.type_at(&path).ok_or_else(|| {
                            Diagnostic::at(target.span, format!("`{target}` is not a record"))
                        })?;
                        let t = types::record(&ty).ok_or_else(|| {
                            Diagnostic::at(
                                target.span,
                                format!("`{target}` ({ty}) is not a record"),
                            )
                        })?;
                        self.store(&path, Value::Record(Record::new(t.name)), span)?;
                    }
                    v => {
                        return Err(Diagnostic::at(
                            target.span,
                            format!("`{target}` is a {}, not a record", v.type_name()),
                        ))
                    }
                }
                self.ctx.push(path);
                self.scopes.push(HashMap::new());
                let r = self.run(body);
                self.scopes.pop();
                self.ctx.pop();
                r
            }
        }
    }

    fn group_assign(&mut self, targets: &[AstItem], value: &Expr, span: Span) -> R<()> {
        let v = self.eval(value)?;
        let paths: Vec<Path> = targets
            .iter()
            .map(|t| match &t.value.kind {
                ExprKind::Name(p) if t.weight.is_none() => Ok(p.clone()),
                _ => Err(Diagnostic::at(
                    t.value.span,
                    "a group assignment takes names (weighted splits are not modelled)",
                )),
            })
            .collect::<R<_>>()?;
        match v {
            Value::Array(items) => {
                if items.len() % paths.len() != 0 {
                    return Err(Diagnostic::at(
                        value.span,
                        format!(
                            "{} items do not split among {} names",
                            items.len(),
                            paths.len()
                        ),
                    ));
                }
                let chunk = items.len() / paths.len();
                for (p, part) in paths.iter().zip(items.chunks(chunk)) {
                    let path = self.resolve_target(p)?;
                    self.store(&path, Value::Array(part.to_vec()), span)?;
                }
            }
            v => {
                for p in &paths {
                    let path = self.resolve_target(p)?;
                    self.store(&path, v.clone(), span)?;
                }
            }
        }
        Ok(())
    }

    /// The variable path an assignment to `target` writes: a field of the
    /// record being edited when it has one of that name, else a variable.
    fn resolve_target(&self, target: &Path) -> R<Vec<String>> {
        let first = &target.parts[0];
        for c in self.ctx.iter().rev() {
            if let Some(ty) = self.type_at(c) {
                if types::field_type(&ty, first).is_some() {
                    let mut p = c.clone();
                    p.extend(target.parts.iter().cloned());
                    return Ok(p);
                }
            }
        }
        if self.var(first).is_some() {
            return Ok(target.parts.clone());
        }
        Err(Diagnostic::at(
            target.span,
            format!("`{first}` is not declared"),
        ))
    }

    /// The value a name reads: a field of a record being edited first,
    /// then a variable.
    pub(crate) fn read(&self, name: &Path) -> R<Value> {
        let first = &name.parts[0];
        for c in self.ctx.iter().rev() {
            if let Some(ty) = self.type_at(c) {
                if types::field_type(&ty, first).is_some() {
                    let mut p = c.clone();
                    p.extend(name.parts.iter().cloned());
                    return self.load(&p, name.span);
                }
            }
        }
        if self.var(first).is_none() {
            return Err(Diagnostic::at(
                name.span,
                format!("`{first}` is not declared"),
            ));
        }
        self.load(&name.parts, name.span)
    }

    fn var(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn var_mut(&mut self, name: &str) -> Option<&mut Var> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    /// The declared type at a path: the variable's, then each field's.
    fn type_at(&self, path: &[String]) -> Option<String> {
        let mut ty = self.var(&path[0])?.ty.clone();
        for f in &path[1..] {
            ty = types::field_type(&ty, f)?.to_string();
        }
        Some(ty)
    }

    /// The value at a path; unset fields of records read as undefined,
    /// sub-records as empty ones. A run parameter reads as itself.
    fn load(&self, path: &[String], span: Span) -> R<Value> {
        let var = self.var(&path[0]).expect("declared");
        if path.len() == 1 {
            if let Some(p) = var.param {
                return Ok(crate::params::symbol(p));
            }
            return Ok(var.value.clone());
        }
        let mut cur = var.value.clone();
        let mut ty = var.ty.clone();
        for f in &path[1..] {
            let Some(fty) = types::field_type(&ty, f) else {
                return Err(Diagnostic::at(span, format!("{ty} has no field `{f}`")));
            };
            if ty == "Bench" && f == "peak_req_rate" {
                return Ok(crate::params::symbol(Param::Peak));
            }
            cur = match cur {
                Value::Record(r) => match r.fields.get(f.as_str()) {
                    Some(field) => field.value.clone(),
                    None => match types::record(fty) {
                        Some(t) => Value::Record(Record::new(t.name)),
                        None => Value::Undef,
                    },
                },
                _ => Value::Undef,
            };
            ty = fty.to_string();
        }
        Ok(cur)
    }

    /// Writes `v`, converted to the declared type, at a path.
    fn store(&mut self, path: &[String], v: Value, span: Span) -> R<()> {
        self.charge(&v, span)?;
        let ty = self
            .type_at(path)
            .ok_or_else(|| Diagnostic::at(span, format!("no field `{}`", path.join("."))))?;
        let v = crate::convert::to_type(v, &ty, span)?;
        if path.len() == 2
            && path[1] == "peak_req_rate"
            && self.type_at(&path[..1]).as_deref() == Some("Bench")
        {
            self.note_param(Param::Peak, &v, span);
        }
        if path.len() == 1 {
            if let Some(p) = self.var(&path[0]).and_then(|v| v.param) {
                self.note_param(p, &v, span);
                return Ok(());
            }
        }
        let var = self.var_mut(&path[0]).expect("declared");
        if path.len() == 1 {
            var.value = v;
            return Ok(());
        }
        let root_ty = var.ty.clone();
        let mut cur = &mut var.value;
        let mut ty = root_ty;
        for (i, f) in path[1..].iter().enumerate() {
            let fty = types::field_type(&ty, f).expect("typed above");
            if !matches!(cur, Value::Record(_)) {
                *cur = Value::Record(Record::new(types::record(&ty).expect("a record").name));
            }
            let Value::Record(r) = cur else {
                unreachable!()
            };
            let last = i + 2 == path.len();
            let entry = r.fields.entry(f.clone()).or_insert_with(|| Field {
                value: match types::record(fty) {
                    Some(t) if !last => Value::Record(Record::new(t.name)),
                    _ => Value::Undef,
                },
                span,
            });
            if last {
                *entry = Field { value: v, span };
                return Ok(());
            }
            cur = &mut entry.value;
            ty = fty.to_string();
        }
        Ok(())
    }

    /// A run parameter's value as the file gives it (`undef()` gives none).
    fn note_param(&mut self, p: Param, v: &Value, span: Span) {
        self.program.params.retain(|(q, _, _)| *q != p);
        if !matches!(v, Value::Undef) {
            self.program.params.push((p, v.clone(), span));
        }
    }

    pub(crate) fn eval_items(&mut self, items: &[AstItem]) -> R<Vec<Item>> {
        let mut out = Vec::new();
        for it in items {
            let value = self.eval(&it.value)?;
            let weight = match &it.weight {
                None => None,
                Some(w) => Some(crate::ops::fraction(self.eval(w)?, w.span)?),
            };
            out.push(Item { value, weight });
        }
        Ok(out)
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> R<Value> {
        Ok(match &e.kind {
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::Int(i) => Value::Int(Q::plain(*i as f64)),
            ExprKind::Float(f) | ExprKind::Percent(f) => Value::Float(Q::plain(*f)),
            ExprKind::Time(s) => Value::Time(Q::plain(*s)),
            ExprKind::Size(b) => Value::Size(Q::plain(*b)),
            ExprKind::Str(s) => Value::Str(s.clone()),
            ExprKind::Quoted(q) => crate::convert::quoted(q, e.span)?,
            ExprKind::Shell(_) => {
                return Err(Diagnostic::at(
                    e.span,
                    "backquoted shell commands are not run: cacheoff reads the file as it is",
                ))
            }
            ExprKind::Qualifier(q) => Value::Qualified(*q, None),
            ExprKind::Name(p) => {
                // A read is a copy.
                let v = self.read(p)?;
                self.charge(&v, e.span)?;
                v
            }
            ExprKind::Call { .. } => self.call_function(e)?,
            ExprKind::Array(items) => Value::Array(self.eval_items(items)?),
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                crate::ops::unary(*op, v, e.span)?
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                crate::ops::binary(*op, x, y, e.span)?
            }
            ExprKind::Regex { .. } => {
                return Err(Diagnostic::at(
                    e.span,
                    "regular expressions (robot ACLs) are not modelled",
                ))
            }
        })
    }
}
