//! What the lowered robots ask for: request types and methods, POST
//! bodies, and how revisits choose among the working set.

use crate::lower::{dist_of, err, fraction, record, round_share, shares, table, Lowering, Taker};
use crate::source::Diagnostic;
use crate::value::{Record, Value};
use toml::{Table, Value as T};

impl Lowering {
    pub(crate) fn requests(&mut self, f: &mut Taker) -> Result<(), Diagnostic> {
        let mut types = vec![("basic", 1.0)];
        if let Some((Value::Array(items), s)) = f.value("req_types") {
            types.clear();
            for (v, w) in shares(&items) {
                let Value::Str(name) = v else {
                    return err(s, "req_types are names");
                };
                let key = match name.as_str() {
                    "Basic" => "basic",
                    "Ims200" => "ims200",
                    "Ims304" => "ims304",
                    "Reload" => "reload",
                    other => {
                        self.unmodelled.push(Diagnostic::at(
                            s,
                            format!("request type {other:?} is not modelled"),
                        ));
                        continue;
                    }
                };
                types.push((key, w));
            }
        }
        let mut get = 1.0;
        let mut methods = Vec::new();
        if let Some((Value::Array(items), s)) = f.value("req_methods") {
            get = 0.0;
            for (v, w) in shares(&items) {
                match v {
                    Value::Str(m) if m == "GET" => get += w,
                    Value::Str(m) if m == "POST" => methods.push(("post", w)),
                    Value::Str(m) if m == "HEAD" => methods.push(("head", w)),
                    Value::Str(m) => self
                        .unmodelled
                        .push(Diagnostic::at(s, format!("method {m:?} is not modelled"))),
                    _ => return err(s, "req_methods are names"),
                }
            }
        }
        if let Some((Value::Array(items), s)) = f.value("post_contents") {
            if let Some(size) = items
                .first()
                .and_then(|i| record(&i.value))
                .and_then(|c| c.fields.get("size"))
            {
                let d = dist_of(&size.value, s, "post_contents' size")?;
                table(&mut self.t, "requests").insert("post_body".into(), T::String(d));
            }
        }
        let req = table(&mut self.t, "requests");
        // GET's request types share GET's part of the methods.
        for (k, w) in types {
            req.insert(k.into(), T::Float(round_share(w * get)));
        }
        for (k, w) in methods {
            req.insert(k.into(), T::Float(round_share(w)));
        }
        Ok(())
    }

    pub(crate) fn pop_model(&mut self, pm: &Record) -> Result<(), Diagnostic> {
        let mut f = Taker::new(pm, "PopModel");
        let pop = table(&mut self.t, "popularity");
        match f.value("pop_distr") {
            Some((Value::Pop { zipf: None }, _)) | None => {}
            Some((Value::Pop { zipf: Some(a) }, _)) => {
                pop.insert("model".into(), T::String(format!("zipf({a})")));
            }
            Some((v, s)) => return err(s, format!("pop_distr is a {}", v.type_name())),
        }
        let frac = f.value("hot_set_frac");
        let prob = f.value("hot_set_prob");
        if let (Some((a, sa)), Some((b, sb))) = (&frac, &prob) {
            let mut hot = Table::new();
            hot.insert(
                "working_set".into(),
                T::Float(fraction(a, *sa, "hot_set_frac")?),
            );
            hot.insert(
                "requests".into(),
                T::Float(fraction(b, *sb, "hot_set_prob")?),
            );
            pop.insert("hot_set".into(), T::Table(hot));
        }
        if let Some((v, s)) = f.value("bhr_discrimination") {
            pop.insert(
                "bhr_discrimination".into(),
                T::Float(fraction(&v, s, "bhr_discrimination")?),
            );
        }
        f.rest(&mut self.unmodelled);
        Ok(())
    }
}
