//! The origin side of a lowered workload: the server (its count, think
//! time, connections) and the content types it serves.

use crate::ast::Span;
use crate::lower::{
    dist_of, err, fraction, http10, plain, record, shares, side_of, table, Lowering, Taker,
};
use crate::source::Diagnostic;
use crate::value::{Field, Record, Value};
use toml::{Table, Value as T};

impl Lowering {
    pub(crate) fn server(
        &mut self,
        r: &Record,
        span: Span,
        bench: Option<&Record>,
    ) -> Result<(), Diagnostic> {
        let mut f = Taker::new(r, "Server");
        f.take("kind");
        let servers = table(&mut self.t, "servers");
        match f.value("addresses") {
            Some((Value::Scheme(s), _)) => match s.scheme {
                "PolyMix3As" | "PolyMix4As" => {
                    servers.insert("per_robot".into(), T::Float(0.1));
                    servers.insert("base".into(), T::Integer(500));
                    self.mapping.push(format!(
                        "servers: {}'s addresses -> 127.2.0.1 and up; count = 0.1 x robots + 500",
                        s.scheme
                    ));
                }
                "WebAxe4As" => {
                    let hosts =
                        side_of(&s, "server_side").and_then(|x| x.get("max_host_load").cloned());
                    let Some(Value::Rate(q)) = hosts else {
                        return err(
                            span,
                            "WebAxe4As needs the bench's server_side.max_host_load",
                        );
                    };
                    let rate = plain(q, span, "server_side.max_host_load")?;
                    servers.insert("rate".into(), T::String(format!("{rate}/s")));
                    self.mapping.push(format!(
                        "servers: WebAxe4As's addresses -> 127.2.0.1 and up; count = peak rate / {rate}/s"
                    ));
                }
                other => return err(span, format!("the {other} address scheme is not modelled")),
            },
            Some((Value::Array(items), _)) => {
                servers.insert("count".into(), T::Integer(items.len() as i64));
                self.mapping.push(format!(
                    "servers: {} addresses -> 127.2.0.1 and up",
                    items.len()
                ));
            }
            Some((v, s)) => return err(s, format!("Server.addresses is a {}", v.type_name())),
            None => return err(span, "the server has no addresses"),
        }
        let _ = bench;
        if let Some((v, s)) = f.value("xact_think") {
            servers.insert(
                "think_time".into(),
                T::String(dist_of(&v, s, "xact_think")?),
            );
        }
        if let Some((v, s)) = f.value("pconn_use_lmt") {
            servers.insert(
                "conn_reuse".into(),
                T::String(dist_of(&v, s, "pconn_use_lmt")?),
            );
        }
        if let Some((Value::Time(q), s)) = f.value("idle_pconn_tout") {
            let secs = plain(q, s, "idle_pconn_tout")?;
            servers.insert(
                "idle_timeout".into(),
                T::String(crate::lower::fmt_secs(secs)),
            );
        }
        if let Some((v, s)) = f.value("http_versions") {
            servers.insert("http10".into(), T::Boolean(http10(&v, s)?));
        }
        if let Some((Value::Int(q), s)) = f.value("accept_lmt") {
            if q.number().is_some_and(|n| n > 0.0) {
                self.unmodelled.push(Diagnostic::at(
                    s,
                    "accept_lmt is not modelled (servers accept all)",
                ));
            }
        }
        if let Some((v, s)) = f.value("abort_prob") {
            table(&mut self.t, "aborts")
                .insert("server".into(), T::Float(fraction(&v, s, "abort_prob")?));
        }
        let direct = match f.value("direct_access") {
            Some((Value::Array(items), _)) => Some(
                items
                    .iter()
                    .filter_map(|i| record(&i.value).map(content_key))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        };
        let Some((Value::Array(contents), cspan)) = f.value("contents") else {
            return err(span, "the server has no contents");
        };
        let mut list = Vec::new();
        for (v, share) in shares(&contents) {
            let Some(c) = record(&v) else {
                return err(cspan, "contents are Content objects");
            };
            let embedded_only = direct
                .as_ref()
                .is_some_and(|d| !d.contains(&content_key(c)));
            list.push(self.content(c, share, embedded_only, cspan)?);
        }
        self.t.insert("content".into(), T::Array(list));
        f.rest(&mut self.unmodelled);
        Ok(())
    }

    fn content(
        &mut self,
        c: &Record,
        share: f64,
        embedded_only: bool,
        span: Span,
    ) -> Result<T, Diagnostic> {
        let mut f = Taker::new(c, "Content");
        let mut t = Table::new();
        let name = match f.value("kind") {
            Some((Value::Str(k), _)) => k.to_lowercase(),
            _ => format!("content{}", share),
        };
        t.insert("name".into(), T::String(name));
        t.insert("share".into(), T::Float(crate::lower::round_share(share)));
        let Some((size, s)) = f.value("size") else {
            return err(span, "a content without a size");
        };
        t.insert("size".into(), T::String(dist_of(&size, s, "size")?));
        let cachable = match f.value("cachable") {
            Some((v, s)) => fraction(&v, s, "cachable")?,
            None => 1.0,
        };
        t.insert("cachable".into(), T::Float(cachable));
        if let Some((v, s)) = f.value("checksum") {
            t.insert("md5".into(), T::Float(fraction(&v, s, "checksum")?));
        }
        if let Some(Field {
            value: Value::Record(m),
            ..
        }) = f.take("mime")
        {
            let mut mf = Taker::new(&m, "Mime");
            if let Some((Value::Str(ty), _)) = mf.value("type") {
                t.insert("mime".into(), T::String(ty));
            }
            if let Some((Value::Array(exts), _)) = mf.value("extensions") {
                let list: Vec<T> = shares(&exts)
                    .into_iter()
                    .filter_map(|(v, w)| match v {
                        Value::Str(e) => {
                            let mut x = Table::new();
                            x.insert("ext".into(), T::String(e));
                            x.insert("share".into(), T::Float(crate::lower::round_share(w)));
                            Some(T::Table(x))
                        }
                        _ => None,
                    })
                    .collect();
                if !list.is_empty() {
                    t.insert("extensions".into(), T::Array(list));
                }
            }
            mf.rest(&mut self.unmodelled);
        }
        if let Some(Field {
            value: Value::Record(olc),
            ..
        }) = f.take("obj_life_cycle")
        {
            t.insert("life_cycle".into(), T::Table(self.life_cycle(&olc)?));
        }
        if embedded_only {
            t.insert("embedded_only".into(), T::Boolean(true));
        }
        let count = f.value("embedded_obj_cnt");
        if let Some((Value::Array(inner), s)) = f.value("may_contain") {
            let kinds: Vec<String> = inner
                .iter()
                .filter_map(|i| record(&i.value))
                .map(|c| match c.get("kind") {
                    Some(Value::Str(k)) => k.to_lowercase(),
                    _ => String::new(),
                })
                .collect();
            let [kind] = kinds.as_slice() else {
                return err(
                    s,
                    "pages embedding more than one content type are not modelled",
                );
            };
            let Some((n, ns)) = count else {
                return err(s, "may_contain without embedded_obj_cnt");
            };
            let mut e = Table::new();
            e.insert("type".into(), T::String(kind.clone()));
            e.insert(
                "count".into(),
                T::String(dist_of(&n, ns, "embedded_obj_cnt")?),
            );
            t.insert("embeds".into(), T::Table(e));
        }
        f.rest(&mut self.unmodelled);
        Ok(T::Table(t))
    }

    fn life_cycle(&mut self, olc: &Record) -> Result<Table, Diagnostic> {
        let mut f = Taker::new(olc, "ObjLifeCycle");
        let mut t = Table::new();
        if let Some((v, s)) = f.value("length") {
            t.insert("length".into(), T::String(dist_of(&v, s, "length")?));
        }
        if let Some((v, s)) = f.value("variance") {
            t.insert("variance".into(), T::Float(fraction(&v, s, "variance")?));
        }
        if let Some((v, s)) = f.value("with_lmt") {
            t.insert("with_lmt".into(), T::Float(fraction(&v, s, "with_lmt")?));
        }
        // A constant birthday in the past: every object was last modified
        // that long before the start.
        if let Some((v, s)) = f.value("birthday") {
            match v {
                Value::Dist(d) if d.name == "const" && d.args[0] <= 0.0 => {
                    t.insert(
                        "modified_ago".into(),
                        T::String(crate::lower::fmt_secs(-d.args[0])),
                    );
                }
                _ => self.unmodelled.push(Diagnostic::at(
                    s,
                    "a birthday other than a constant time in the past is not modelled",
                )),
            }
        }
        // cacheoff's objects expire at their next modification: the
        // one Expires model it has.
        if let Some((Value::Array(items), s)) = f.value("expires") {
            let next_mod = items.iter().all(|i| {
                matches!(&i.value, Value::Qualified(crate::ast::Qualifier::Nmt, Some(d))
                    if d.name == "const" && d.args == [0.0])
            });
            if !next_mod {
                self.unmodelled.push(Diagnostic::at(
                    s,
                    "Expires other than the next modification time (nmt + const(0sec)) is not modelled",
                ));
            }
        }
        f.rest(&mut self.unmodelled);
        Ok(t)
    }
}

/// A content type's identity among the server's lists: its kind and size.
fn content_key(c: &Record) -> String {
    format!("{:?}/{:?}", c.get("kind"), c.get("size"))
}
