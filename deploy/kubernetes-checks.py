"""What the API schemas cannot check in a rendered cacheoff set-up.

ops/validate-k8s.sh renders each kustomization, validates it against the
Kubernetes schemas, then runs this on the render (a multi-document YAML
file). It checks that the pieces of a run agree with each other:

- every $(VAR) in a container's command, args or env values is defined
  where Kubernetes expands it: an env value sees the envFrom ConfigMaps'
  keys and the env entries before it (a kustomize merge can reorder them),
  command and args see all of them; else the text stays literal;
- every ConfigMap a pod reads (and each key an env entry takes from one),
  and every volume claim a Job mounts, is in the render;
- a run (an Indexed Job of agents plus a coordinator Job running `cacheoff
  run`): parallelism = completions = N, the pods' subdomain is a headless
  Service selecting them on the agents' port, each agent serves one run
  (--runs=1) on its pod IP (--host-ip=$(POD_IP)), and the coordinator's
  --agents names agents 0..N-1 by their DNS names, each once, and waits
  for them (--agent-wait);
- the run's security: a NetworkPolicy isolates the agent pods, and every
  ingress rule admitting the agents' port admits only the coordinator's
  pods (by a podSelector naming app.kubernetes.io/name, no ipBlock, no
  namespaceSelector, no rule open to all), one of them admitting it; the
  agents and the coordinator read the fleet's credentials from one
  Secret's volume (--fleet-dir = its mountPath, or --secret-file in it),
  each side's files only (items: never the other side's key), readable by
  the pod's user; neither passes --insecure; the agents pass
  --allow-target, a list of addresses or CIDRs with optional ports.

Usage: python3 kubernetes-checks.py RENDERED.yaml; exit 1 with one line per
problem.
"""

import ipaddress
import posixpath
import re
import sys

import yaml

# $(NAME) as Kubernetes expands it; $$(NAME) is an escaped literal.
VAR = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def pod_specs(docs):
    """(kind/name, pod spec, the Job or None) of every pod-making object."""
    for d in docs:
        kind, name = d.get("kind"), d.get("metadata", {}).get("name")
        if kind == "Job":
            yield f"job/{name}", d["spec"]["template"]["spec"], d
        elif kind == "Pod":
            yield f"pod/{name}", d["spec"], None


def flags(args, name):
    """Every value of --name=VALUE or --name VALUE in args."""
    values = []
    for i, a in enumerate(args):
        if a.startswith(f"--{name}="):
            values.append(a.split("=", 1)[1])
        elif a == f"--{name}" and i + 1 < len(args):
            values.append(args[i + 1])
    return values


def flag(args, name):
    """The first value of --name in args, else None."""
    return next(iter(flags(args, name)), None)


# The files of `cacheoff tls DIR`'s fleet/ each side reads.
FLEET_FILES = {
    "agent": ("agent.pem", "agent.key"),
    "coordinator": ("coordinator.pem", "coordinator.key"),
}


def env_value(container, name):
    for e in container.get("env", []):
        if e["name"] == name:
            return e
    return None


def selects(selector, labels):
    """Whether a label selector (matchLabels, matchExpressions) selects labels."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, values = e["key"], e["operator"], e.get("values") or []
        if (
            (op == "In" and labels.get(k) not in values)
            or (op == "NotIn" and k in labels and labels[k] in values)
            or (op == "Exists" and k not in labels)
            or (op == "DoesNotExist" and k in labels)
        ):
            return False
    return True


def pod_labels(job):
    return job["spec"]["template"].get("metadata", {}).get("labels", {}) or {}


def admits_port(rule, port, named):
    """Whether a NetworkPolicy ingress rule admits TCP port (named: the
    agent container's port names)."""
    entries = rule.get("ports")
    if not entries:
        return True
    for p in entries:
        if p.get("protocol", "TCP") != "TCP":
            continue
        lo = p.get("port")
        if lo is None:
            return True
        lo = named.get(lo, lo) if isinstance(lo, str) else lo
        if isinstance(lo, int) and lo <= port <= p.get("endPort", lo):
            return True
    return False


def bad_target(rule):
    """Why an --allow-target entry is no CIDR[:PORTS], or None."""
    host, ports = rule, None
    if rule.startswith("["):
        host, _, after = rule[1:].partition("]")
        if after:
            ports = after[1:] if after.startswith(":") else ""
    elif ":" in rule:
        try:
            ipaddress.ip_network(rule, strict=False)
        except ValueError:
            host, ports = rule.rsplit(":", 1)
    try:
        ipaddress.ip_network(host, strict=False)
    except ValueError:
        return "not an address or CIDR (agents match the proxy and servers by IP)"
    if ports is not None and ports != "*":
        lo, _, hi = ports.partition("-")
        hi = hi or lo
        if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi) <= 65535):
            return f"no port or port range: {ports!r}"
    return None


class Checker:
    def __init__(self, docs):
        self.docs = docs
        self.errors = []
        self.config_maps = {
            d["metadata"]["name"]: d.get("data", {}) or {}
            for d in docs
            if d.get("kind") == "ConfigMap"
        }
        self.claims = {
            d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"
        }
        self.services = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Service"}

    def error(self, where, what):
        self.errors.append(f"{where}: {what}")

    def check_vars(self, where, container, implicit):
        known = set(implicit)
        for source in container.get("envFrom", []):
            ref = source.get("configMapRef")
            if ref is None:
                continue
            data = self.config_maps.get(ref["name"])
            if data is None:
                self.error(where, f"envFrom ConfigMap {ref['name']} is not in the render")
                continue
            known |= {source.get("prefix", "") + k for k in data}
        for e in container.get("env", []):
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            if ref is not None and not ref.get("optional"):
                data = self.config_maps.get(ref["name"])
                if data is None:
                    self.error(
                        where, f"env {e['name']}: ConfigMap {ref['name']} is not in the render"
                    )
                elif ref["key"] not in data:
                    self.error(
                        where, f"env {e['name']}: ConfigMap {ref['name']} has no key {ref['key']}"
                    )
            for ref in VAR.findall(e.get("value", "")):
                if ref not in known:
                    self.error(
                        where,
                        f"env {e['name']} uses $({ref}), not defined before it "
                        "(envFrom or an earlier env entry): it would stay literal",
                    )
            known.add(e["name"])
        for field in ("command", "args"):
            for arg in container.get(field, []):
                for ref in VAR.findall(arg):
                    if ref not in known:
                        self.error(where, f"{field} {arg!r} uses $({ref}), which is not defined")

    def expand(self, container, text):
        """text with its $(VAR)s replaced as Kubernetes would, or None when
        one comes from elsewhere than a ConfigMap or a literal."""
        values = {}
        for source in container.get("envFrom", []):
            ref = source.get("configMapRef")
            if ref is not None:
                for k, v in self.config_maps.get(ref["name"], {}).items():
                    values[source.get("prefix", "") + k] = v
        for e in container.get("env", []):
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            if "value" in e:
                values[e["name"]] = e["value"]
            elif ref is not None and ref["key"] in self.config_maps.get(ref["name"], {}):
                values[e["name"]] = self.config_maps[ref["name"]][ref["key"]]
            else:
                values.pop(e["name"], None)
        if any(name not in values for name in VAR.findall(text)):
            return None
        return VAR.sub(lambda m: values[m.group(1)], text)

    def check_refs(self, where, spec, job):
        for v in spec.get("volumes", []):
            if "configMap" in v and v["configMap"]["name"] not in self.config_maps:
                self.error(
                    where,
                    f"volume {v['name']}: ConfigMap {v['configMap']['name']} is not in the render",
                )
            claim = v.get("persistentVolumeClaim")
            # A Job's claims belong to its render; a helper pod (the results
            # reader) mounts one that a run made.
            if claim and job is not None and claim["claimName"] not in self.claims:
                self.error(
                    where, f"volume {v['name']}: claim {claim['claimName']} is not in the render"
                )

    def run(self):
        agents, coordinators = [], []
        for where, spec, job in pod_specs(self.docs):
            indexed = job is not None and job["spec"].get("completionMode") == "Indexed"
            implicit = {"JOB_COMPLETION_INDEX"} if indexed else set()
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                self.check_vars(f"{where} container {c['name']}", c, implicit)
            self.check_refs(where, spec, job)
            if indexed:
                agents.append(job)
            elif job is not None and any(
                (c.get("args") or [None])[0] == "run" and flag(c["args"], "agents") is not None
                for c in spec["containers"]
            ):
                coordinators.append(job)
        if not agents and not coordinators:
            return
        if len(agents) != 1 or len(coordinators) != 1:
            self.error(
                "run",
                f"wants one Indexed Job of agents and one coordinator Job, found {len(agents)} and {len(coordinators)}",
            )
            return
        self.check_run(agents[0], coordinators[0])

    def check_agents(self, job):
        """The agents' port, or None when they are not set up right."""
        name = job["metadata"]["name"]
        where = f"job/{name}"
        spec, pod = job["spec"], job["spec"]["template"]["spec"]
        n = spec.get("completions")
        if not isinstance(n, int) or n < 1 or spec.get("parallelism") != n:
            self.error(
                where,
                f"parallelism ({spec.get('parallelism')}) must equal completions ({n}): every agent at once",
            )
        if pod.get("restartPolicy") != "Never":
            self.error(where, "restartPolicy must be Never: a restarted agent joins no run")
        agent = next(
            (c for c in pod["containers"] if (c.get("args") or [None])[0] == "agent"), None
        )
        if agent is None:
            self.error(where, "no container runs `cacheoff agent`")
            return None
        args = agent["args"]
        if flag(args, "runs") != "1":
            self.error(where, "agents must exit after the run: --runs=1")
        targets = flags(args, "allow-target")
        if not targets:
            self.error(
                where,
                "agents must pass --allow-target (CIDR[:PORTS],...): else their robots go wherever the coordinator's run says",
            )
        for t in targets:
            value = self.expand(agent, t)
            for rule in [] if value is None else value.split(","):
                why = bad_target(rule.strip())
                if why:
                    self.error(where, f"--allow-target={value!r}: {rule.strip()!r} is {why}")
        if flag(args, "host-ip") != "$(POD_IP)":
            self.error(where, "robots and servers must use the pod IP: --host-ip=$(POD_IP)")
        pod_ip = env_value(agent, "POD_IP")
        if (
            pod_ip is None
            or pod_ip.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "status.podIP"
        ):
            self.error(where, "POD_IP must come from the downward API (status.podIP)")
        listen = flag(args, "listen") or ""
        port = listen.rsplit(":", 1)[-1]
        if not port.isdigit():
            self.error(where, f"--listen={listen!r} names no port")
            return None
        port = int(port)
        labels = job["spec"]["template"].get("metadata", {}).get("labels", {})
        subdomain = pod.get("subdomain")
        service = self.services.get(subdomain)
        if service is None:
            self.error(
                where,
                f"subdomain {subdomain!r} is no Service in the render: agents would have no DNS names",
            )
            return port
        sspec = service["spec"]
        swhere = f"service/{subdomain}"
        if sspec.get("clusterIP") != "None":
            self.error(swhere, "must be headless (clusterIP: None) to give each agent pod a name")
        selector = sspec.get("selector", {})
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            self.error(swhere, f"selector {selector} does not select the agent pods {labels}")
        named = {p.get("name"): p["containerPort"] for p in agent.get("ports", [])}
        for p in sspec.get("ports", []):
            target = p.get("targetPort", p["port"])
            if named.get(target, target) != port:
                self.error(
                    swhere,
                    f"port {p['port']} goes to {target}, not the agents' --listen port {port}",
                )
        return port

    def check_policy(self, agents, coordinator, port):
        """Only the coordinator's pods reach the agents' port."""
        labels, coord = pod_labels(agents), pod_labels(coordinator)
        where = f"job/{agents['metadata']['name']}"
        namespace = agents["metadata"].get("namespace")
        spec = agents["spec"]["template"]["spec"]
        named = {
            p["name"]: p["containerPort"]
            for c in spec["containers"]
            for p in c.get("ports", [])
            if "name" in p
        }
        others = [
            pod_labels(d) if d["kind"] == "Job" else d["metadata"].get("labels", {})
            for d in self.docs
            if d.get("kind") in ("Job", "Pod") and d is not coordinator
        ]
        policies = [
            d
            for d in self.docs
            if d.get("kind") == "NetworkPolicy"
            and d["metadata"].get("namespace") == namespace
            and selects(d["spec"].get("podSelector", {}), labels)
        ]
        if not policies:
            self.error(
                where,
                f"no NetworkPolicy selects the agent pods {labels}: any pod may reach their port {port}",
            )
            return
        isolating = [
            d for d in policies if "Ingress" in d["spec"].get("policyTypes", ["Ingress"])
        ]
        if not isolating:
            self.error(
                where,
                "no NetworkPolicy selecting the agent pods has Ingress in policyTypes: their port stays open to all",
            )
            return
        coordinator_admitted = False
        for d in isolating:
            pwhere = f"networkpolicy/{d['metadata']['name']}"
            for i, rule in enumerate(d["spec"].get("ingress") or []):
                if not admits_port(rule, port, named):
                    continue
                peers = rule.get("from") or []
                if not peers:
                    self.error(
                        pwhere,
                        f"ingress rule {i} admits the agents' port {port} from anywhere (no from): only the coordinator's pods may reach it",
                    )
                for peer in peers:
                    sel = peer.get("podSelector")
                    if sel is None or set(peer) != {"podSelector"}:
                        self.error(
                            pwhere,
                            f"ingress rule {i} admits the agents' port {port} from {sorted(set(peer) - {'podSelector'}) or 'anywhere'}: only a podSelector for the coordinator's pods",
                        )
                    elif not selects(sel, coord):
                        self.error(
                            pwhere,
                            f"ingress rule {i}: podSelector {sel} does not select the coordinator's pods {coord}",
                        )
                    elif any(selects(sel, o) for o in others):
                        self.error(
                            pwhere,
                            f"ingress rule {i}: podSelector {sel} selects other pods than the coordinator's {coord}",
                        )
                    elif selects(
                        sel, {k: v for k, v in coord.items() if k != "app.kubernetes.io/name"}
                    ):
                        self.error(
                            pwhere,
                            f"ingress rule {i}: podSelector {sel} must name app.kubernetes.io/name too: else another application's pods may reach the agents",
                        )
                    else:
                        coordinator_admitted = True
        if not coordinator_admitted:
            self.error(
                where,
                f"no NetworkPolicy ingress rule admits the coordinator's pods to the agents' port {port}",
            )

    def check_fleet(self, sides):
        """sides: (side, job, container) of the agents and the coordinator;
        one Secret's credentials each, no --insecure."""
        secrets = {}
        for side, job, c in sides:
            where = f"job/{job['metadata']['name']}"
            spec = job["spec"]["template"]["spec"]
            args = c["args"]
            if any(a == "--insecure" or a.startswith("--insecure=") for a in args):
                self.error(
                    where,
                    "--insecure: plaintext fleet links that anyone reaching an agent can drive; use --fleet-dir",
                )
            fleet_dir, secret_file = flag(args, "fleet-dir"), flag(args, "secret-file")
            if fleet_dir is None and secret_file is None:
                self.error(
                    where,
                    f"the {side} has no fleet credentials: --fleet-dir=<mountPath of the fleet Secret's volume>",
                )
                continue
            path = posixpath.normpath(fleet_dir or secret_file)
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            found = None
            for m in c.get("volumeMounts", []):
                v = volumes.get(m["name"], {})
                mount = posixpath.normpath(m["mountPath"])
                if "secret" not in v or m.get("subPath"):
                    continue
                if (fleet_dir and mount in (path, posixpath.join(path, "fleet"))) or (
                    secret_file and posixpath.dirname(path) == mount
                ):
                    found = (mount, v)
            flag_text = f"--fleet-dir={fleet_dir}" if fleet_dir else f"--secret-file={secret_file}"
            if found is None:
                self.error(
                    where,
                    f"{flag_text} is not in a Secret volume this container mounts: the {side} would find no credentials",
                )
                continue
            mount, v = found
            secret = v["secret"]
            secrets[side] = secret.get("secretName")
            items = secret.get("items")
            modes = [(i.get("mode", secret.get("defaultMode", 0o644)), i["path"]) for i in items or []]
            self.check_readable(where, spec, c, modes or [(secret.get("defaultMode", 0o644), "*")])
            if fleet_dir is None:
                if items is not None and posixpath.basename(path) not in {i["path"] for i in items}:
                    self.error(where, f"volume {v['name']} gives the {side} no {path}")
                continue
            if items is None:
                self.error(
                    where,
                    f"volume {v['name']} mounts every key of Secret {secrets[side]}: list items, the {side} reading only ca.pem and {', '.join(FLEET_FILES[side])}",
                )
                continue
            files = {posixpath.normpath(posixpath.join(mount, i["path"])) for i in items}
            creds = posixpath.join(path, "fleet")
            if posixpath.join(creds, "ca.pem") not in files:
                creds = path
            for name in ("ca.pem",) + FLEET_FILES[side]:
                if posixpath.join(creds, name) not in files:
                    self.error(where, f"volume {v['name']} gives the {side} no {creds}/{name}")
            for other, (_, key) in FLEET_FILES.items():
                if other != side and any(i["key"] == key for i in items):
                    self.error(
                        where,
                        f"volume {v['name']} gives the {side} {key}: the {other}'s key belongs to the {other} alone",
                    )
        if len(set(secrets.values())) > 1:
            self.error(
                "run",
                f"the agents and the coordinator read different Secrets ({secrets}): one fleet, one Secret",
            )

    def check_readable(self, where, spec, c, modes):
        """Whether the pod's user can read files of these (mode, path)s: the
        kubelet gives them the fsGroup and g+r, else they are root's."""
        pod_sc, sc = spec.get("securityContext", {}), c.get("securityContext", {})
        uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
        if uid == 0 or pod_sc.get("fsGroup") is not None:
            return
        for mode, name in modes:
            if not mode & 0o004:
                who = "the image's user" if uid is None else f"uid {uid}"
                self.error(
                    where,
                    f"the fleet's {name} is mode {mode:04o}, root's: unreadable by {who} without an fsGroup",
                )
                return

    def check_run(self, agents, coordinator):
        port = self.check_agents(agents)
        if port is not None:
            self.check_policy(agents, coordinator, port)
        self.check_fleet(
            [
                (side, job, c)
                for side, job, cmd in (("agent", agents, "agent"), ("coordinator", coordinator, "run"))
                for c in job["spec"]["template"]["spec"]["containers"]
                if (c.get("args") or [None])[0] == cmd
            ]
        )
        job, subdomain = agents["metadata"]["name"], agents["spec"]["template"]["spec"].get(
            "subdomain"
        )
        n = agents["spec"].get("completions")
        where = f"job/{coordinator['metadata']['name']}"
        if coordinator["spec"].get("backoffLimit") != 0:
            self.error(where, "backoffLimit must be 0: a retry would start a second run")
        c = next(
            c
            for c in coordinator["spec"]["template"]["spec"]["containers"]
            if (c.get("args") or [None])[0] == "run"
        )
        if flag(c["args"], "agent-wait") is None:
            self.error(where, "the coordinator must wait for the agents' pods: --agent-wait")
        listed = flag(c["args"], "agents")
        whole = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", listed)
        if whole:
            e = env_value(c, whole.group(1))
            if e is None or "value" not in e:
                self.error(
                    where, f"--agents={listed}: {whole.group(1)} must be an env entry with a value"
                )
                return
            listed = e["value"]
        namespace = coordinator["metadata"].get("namespace")
        namespaces = {"$(POD_NAMESPACE)"} | ({namespace} if namespace else set())
        if "$(POD_NAMESPACE)" in listed:
            e = env_value(c, "POD_NAMESPACE")
            if (
                e is None
                or e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                != "metadata.namespace"
            ):
                self.error(
                    where, "POD_NAMESPACE must come from the downward API (metadata.namespace)"
                )
        seen = []
        for entry in listed.split(","):
            m = re.fullmatch(
                rf"{re.escape(job)}-(\d+)\.{re.escape(subdomain or '')}(?:\.([^.]+)\.svc(?:\.[a-z0-9.-]+)?)?:(\d+)",
                entry.strip(),
            )
            if m is None:
                self.error(
                    where,
                    f"--agents entry {entry!r} is not {job}-<index>.{subdomain}[.<namespace>.svc]:<port>",
                )
                continue
            index, ns, p = int(m.group(1)), m.group(2), int(m.group(3))
            if ns is not None and ns not in namespaces:
                self.error(where, f"--agents entry {entry!r} names namespace {ns}, not the run's")
            if port is not None and p != port:
                self.error(where, f"--agents entry {entry!r}: the agents listen on {port}")
            seen.append(index)
        if isinstance(n, int) and sorted(seen) != list(range(n)):
            self.error(
                where,
                f"--agents names indexes {sorted(seen)}, the agents Job runs 0..{n - 1}: each exactly once",
            )


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    with open(sys.argv[1], encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    checker = Checker(docs)
    checker.run()
    for e in checker.errors:
        print(f"ERROR {sys.argv[1]}: {e}")
    sys.exit(1 if checker.errors else 0)


if __name__ == "__main__":
    main()
