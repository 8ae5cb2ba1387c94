"""What the API schemas cannot check in a rendered cacheoff set-up.

ops/validate-k8s.sh renders each kustomization, validates it against the
Kubernetes schemas, then runs this on the render (a multi-document YAML
file). It checks that the pieces of a run agree with each other:

- every $(VAR) in a container's command, args or env values is defined
  where Kubernetes expands it: an env value sees the envFrom ConfigMaps'
  keys and the env entries before it (a kustomize merge can reorder them),
  command and args see all of them; else the text stays literal;
- every ConfigMap a pod reads, and every volume claim a Job mounts, is in
  the render;
- a run (an Indexed Job of agents plus a coordinator Job running `cacheoff
  run`): parallelism = completions = N, the pods' subdomain is a headless
  Service selecting them on the agents' port, each agent serves one run
  (--runs=1) on its pod IP (--host-ip=$(POD_IP)), and the coordinator's
  --agents names agents 0..N-1 by their DNS names, each once, and waits
  for them (--agent-wait).

Usage: python3 kubernetes-checks.py RENDERED.yaml; exit 1 with one line per
problem.
"""

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


def flag(args, name):
    """The value of --name=VALUE or --name VALUE in args, else None."""
    for i, a in enumerate(args):
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
        if a == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return None


def env_value(container, name):
    for e in container.get("env", []):
        if e["name"] == name:
            return e
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

    def check_run(self, agents, coordinator):
        port = self.check_agents(agents)
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
