//! The product files' templates: `{{name}}` is replaced by a variable's
//! value, `{{#if name}}…{{else}}…{{/if}}` keeps its first part when the
//! variable has a value in this start (a non-empty one) and the `else`
//! part otherwise; `if`s nest. Nothing else is special: `{{` always opens
//! a tag. Names are checked when a product file is loaded (an unknown
//! name is an error that names it); a known variable without a value in
//! this start (`{{parent}}` when no parent proxy was given) is an error
//! when the template is rendered.

use std::collections::BTreeMap;

/// Every variable a template may use, with what it holds (docs/products.md
/// lists the same; a test holds the two together).
pub const VARIABLES: &[(&str, &str)] = &[
    ("binary", "the product's binary (its `binary` key, rendered)"),
    ("exe", "the cacheoff executable (the reference proxy's binary)"),
    ("dir", "the product's run directory, absolute"),
    ("instance", "a name unique to the run directory: `co` and 12 hex digits"),
    ("user", "the user the product runs as: `user_when_root` when cacheoff runs as root, else the current user"),
    ("nofile", "the open-files limit the product gets (cacheoff's hard limit)"),
    ("listen", "the address to listen on, `HOST:PORT`"),
    ("listen_host", "its host (an IPv6 address without brackets)"),
    ("listen_port", "its port"),
    ("mem_bytes", "the memory cache size in bytes"),
    ("mem_mb", "the memory cache size in MiB (at least 1)"),
    ("mem_file_mb", "the memory cache size in MiB, at least `min_disk_mb`: a cache file that stands in for a disk cache when none is configured"),
    ("disk", "set when a disk cache is configured"),
    ("disk_dir", "the disk cache's directory, absolute"),
    ("disk_bytes", "the disk cache size in bytes, at least `min_disk_mb`"),
    ("disk_mb", "the disk cache size in MiB (at least 1, and at least `min_disk_mb`)"),
    ("parent", "the parent proxy, `HOST:PORT` (forward mode, when given)"),
    ("parent_host", "the parent proxy's host"),
    ("parent_port", "the parent proxy's port"),
    ("forward", "set in forward mode"),
    ("reverse", "set in reverse mode"),
    ("origin_map", "reverse: the address map in its text form (`NAME HOST:PORT` lines)"),
    ("squid_origins", "reverse: Squid `cache_peer`s, one per origin, with their `dstdomain` ACLs and `cache_peer_access`, and the ACL `cacheoff_origins` of all names"),
    ("varnish_backends", "reverse: one VCL `backend` per origin"),
    ("varnish_routing", "reverse: VCL statements for `vcl_recv` that choose the backend by `req.http.host`, and answer 404 for other names"),
    ("nginx_origin_map", "reverse: the lines of a `map $host …` block, each origin name to its upstream"),
    ("nginx_upstreams", "reverse: one nginx `upstream` block per origin"),
    ("ats_remap", "reverse: Traffic Server `remap.config` lines, one `map` per origin"),
    ("h2o_hosts", "reverse: entries of h2o's `hosts:` map, one per origin name, proxied to its server"),
    ("tls", "set when the product also takes HTTPS (a product file with `tls = true`, started with TLS settings)"),
    ("tls_listen", "the address to take HTTPS on, `HOST:PORT`"),
    ("tls_listen_host", "its host"),
    ("tls_listen_port", "its port"),
    ("tls_cert", "the test CA's server certificate chain (PEM), absolute"),
    ("tls_key", "its private key (PEM, PKCS#8), absolute"),
    ("tls_pem", "the key followed by the chain in one PEM file in the run directory (as hitch wants it)"),
];

/// Whether `name` is one of [`VARIABLES`].
pub fn is_variable(name: &str) -> bool {
    VARIABLES.iter().any(|(n, _)| *n == name)
}

/// Values of one start; a variable that is absent has no value here.
pub type Vars = BTreeMap<&'static str, String>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unknown variable {{{{{0}}}}}")]
    Unknown(String),
    #[error("{{{{{0}}}}} has no value in this start")]
    Unset(String),
    #[error("unclosed tag at byte {0}")]
    Unclosed(usize),
    #[error("{0} at byte {1} without a matching {{{{#if}}}}")]
    Stray(&'static str, usize),
    #[error("{{{{#if {0}}}}} is never closed with {{{{/if}}}}")]
    OpenIf(String),
    #[error("bad tag {0:?}")]
    BadTag(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    Var(String),
    If {
        name: String,
        then: Vec<Node>,
        els: Vec<Node>,
    },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    nodes: Vec<Node>,
}

enum Tag<'a> {
    Var(&'a str),
    If(&'a str),
    Else,
    EndIf,
}

fn tag(inner: &str) -> Result<Tag<'_>, TemplateError> {
    let t = inner.trim();
    let name_ok =
        |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if let Some(rest) = t.strip_prefix("#if") {
        let n = rest.trim();
        if rest.starts_with(char::is_whitespace) && name_ok(n) {
            return Ok(Tag::If(n));
        }
    } else if t == "else" {
        return Ok(Tag::Else);
    } else if t == "/if" {
        return Ok(Tag::EndIf);
    } else if name_ok(t) {
        return Ok(Tag::Var(t));
    }
    Err(TemplateError::BadTag(format!("{{{{{inner}}}}}")))
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        // A stack of open `if`s: (name, then, else, in the else part).
        let mut stack: Vec<(String, Vec<Node>, Vec<Node>, bool)> = Vec::new();
        let mut top: Vec<Node> = Vec::new();
        let mut rest = text;
        let mut pos = 0;
        fn cur<'a>(
            top: &'a mut Vec<Node>,
            stack: &'a mut [(String, Vec<Node>, Vec<Node>, bool)],
        ) -> &'a mut Vec<Node> {
            match stack.last_mut() {
                Some((_, then, els, in_else)) => {
                    if *in_else {
                        els
                    } else {
                        then
                    }
                }
                None => top,
            }
        }
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                cur(&mut top, &mut stack).push(Node::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or(TemplateError::Unclosed(pos + open))?;
            let at = pos + open;
            match tag(&after[..close])? {
                Tag::Var(n) => {
                    if !is_variable(n) {
                        return Err(TemplateError::Unknown(n.to_string()));
                    }
                    cur(&mut top, &mut stack).push(Node::Var(n.to_string()));
                }
                Tag::If(n) => {
                    if !is_variable(n) {
                        return Err(TemplateError::Unknown(n.to_string()));
                    }
                    stack.push((n.to_string(), Vec::new(), Vec::new(), false));
                }
                Tag::Else => match stack.last_mut() {
                    Some((_, _, _, in_else)) if !*in_else => *in_else = true,
                    _ => return Err(TemplateError::Stray("{{else}}", at)),
                },
                Tag::EndIf => {
                    let (name, then, els, _) =
                        stack.pop().ok_or(TemplateError::Stray("{{/if}}", at))?;
                    cur(&mut top, &mut stack).push(Node::If { name, then, els });
                }
            }
            let consumed = open + 2 + close + 2;
            pos += consumed;
            rest = &rest[consumed..];
        }
        if let Some((name, ..)) = stack.pop() {
            return Err(TemplateError::OpenIf(name));
        }
        if !rest.is_empty() {
            top.push(Node::Text(rest.to_string()));
        }
        Ok(Template { nodes: top })
    }

    pub fn render(&self, vars: &Vars) -> Result<String, TemplateError> {
        let mut out = String::new();
        render_nodes(&self.nodes, vars, &mut out)?;
        Ok(out)
    }

    /// Every variable the template names, in order, once each.
    pub fn names(&self) -> Vec<String> {
        fn walk(nodes: &[Node], out: &mut Vec<String>) {
            for n in nodes {
                match n {
                    Node::Text(_) => {}
                    Node::Var(v) => push(out, v),
                    Node::If { name, then, els } => {
                        push(out, name);
                        walk(then, out);
                        walk(els, out);
                    }
                }
            }
        }
        fn push(out: &mut Vec<String>, v: &str) {
            if !out.iter().any(|o| o == v) {
                out.push(v.to_string());
            }
        }
        let mut out = Vec::new();
        walk(&self.nodes, &mut out);
        out
    }
}

fn is_set(vars: &Vars, name: &str) -> bool {
    vars.get(name).is_some_and(|v| !v.is_empty())
}

fn render_nodes(nodes: &[Node], vars: &Vars, out: &mut String) -> Result<(), TemplateError> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Var(v) => out.push_str(
                vars.get(v.as_str())
                    .ok_or_else(|| TemplateError::Unset(v.clone()))?,
            ),
            Node::If { name, then, els } => {
                let part = if is_set(vars, name) { then } else { els };
                render_nodes(part, vars, out)?;
            }
        }
    }
    Ok(())
}

/// Parses and renders in one step.
pub fn render(text: &str, vars: &Vars) -> Result<String, TemplateError> {
    Template::parse(text)?.render(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&'static str, &str)]) -> Vars {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn variables_are_substituted() {
        let v = vars(&[("dir", "/run/x"), ("listen", "127.0.0.1:3128")]);
        assert_eq!(
            render("pid {{dir}}/p; listen {{ listen }};", &v).unwrap(),
            "pid /run/x/p; listen 127.0.0.1:3128;"
        );
        assert_eq!(render("no tags", &v).unwrap(), "no tags");
        assert_eq!(render("", &v).unwrap(), "");
    }

    #[test]
    fn conditions_keep_one_part_and_nest() {
        let t = "a{{#if disk}}[{{disk_dir}}{{#if parent}}+{{parent}}{{/if}}]{{else}}-{{/if}}z";
        assert_eq!(render(t, &vars(&[])).unwrap(), "a-z");
        assert_eq!(render(t, &vars(&[("disk", "")])).unwrap(), "a-z");
        assert_eq!(
            render(t, &vars(&[("disk", "1"), ("disk_dir", "/d")])).unwrap(),
            "a[/d]z"
        );
        assert_eq!(
            render(
                t,
                &vars(&[("disk", "1"), ("disk_dir", "/d"), ("parent", "p:1")])
            )
            .unwrap(),
            "a[/d+p:1]z"
        );
        assert_eq!(
            Template::parse(t).unwrap().names(),
            ["disk", "disk_dir", "parent"]
        );
    }

    #[test]
    fn an_unknown_variable_is_named() {
        assert_eq!(
            Template::parse("x {{dri}} y").unwrap_err(),
            TemplateError::Unknown("dri".into())
        );
        assert_eq!(
            Template::parse("{{#if nope}}{{/if}}").unwrap_err(),
            TemplateError::Unknown("nope".into())
        );
        assert_eq!(
            TemplateError::Unknown("dri".into()).to_string(),
            "unknown variable {{dri}}"
        );
    }

    #[test]
    fn a_variable_without_a_value_is_an_error_when_used() {
        let e = render("{{parent}}", &vars(&[])).unwrap_err();
        assert_eq!(e, TemplateError::Unset("parent".into()));
        assert_eq!(e.to_string(), "{{parent}} has no value in this start");
        // Unused in the branch taken: fine.
        assert_eq!(
            render("{{#if parent}}{{parent}}{{/if}}", &vars(&[])).unwrap(),
            ""
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(matches!(
            Template::parse("a {{dir"),
            Err(TemplateError::Unclosed(2))
        ));
        assert!(matches!(
            Template::parse("{{/if}}"),
            Err(TemplateError::Stray(..))
        ));
        assert!(matches!(
            Template::parse("{{else}}"),
            Err(TemplateError::Stray(..))
        ));
        assert!(matches!(
            Template::parse("{{#if disk}}{{else}}{{else}}{{/if}}"),
            Err(TemplateError::Stray(..))
        ));
        assert_eq!(
            Template::parse("{{#if disk}}x").unwrap_err(),
            TemplateError::OpenIf("disk".into())
        );
        assert!(matches!(
            Template::parse("{{a b}}"),
            Err(TemplateError::BadTag(_))
        ));
        assert!(matches!(
            Template::parse("{{#ifdisk}}{{/if}}"),
            Err(TemplateError::BadTag(_))
        ));
    }
}
