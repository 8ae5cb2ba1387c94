#!/usr/bin/env bash
# Validates the Kubernetes manifests (docs/distributed.md, "On
# Kubernetes"): renders every kustomization under deploy/kubernetes (base,
# overlays, tools) with kustomize, validates each render against the
# Kubernetes API schemas of the versions below with kubernetes-validate
# (strict: unknown fields are errors), then checks what schemas cannot
# (deploy/kubernetes-checks.py: $(VAR)s defined, the agent count and the
# coordinator's --agents list agree, the headless Service selects the
# agents, a NetworkPolicy lets only the coordinator reach them, both mount
# the fleet's Secret at their --fleet-dir, agents pass --allow-target).
# Exits 1 when any render fails.
#
# kubernetes-validate comes from PyPI, pinned, into a venv of its own
# ($CACHEOFF_K8S_VENV, default /opt/cacheoff-k8s-venv; made on first use).
# kustomize is the machine's `kubectl kustomize` (the kubectl package of
# the machine image) or a `kustomize` on PATH. Nothing else is fetched.
#
# Usage: ops/validate-k8s.sh [DIR]      validate DIR (default deploy/kubernetes)
#        ops/validate-k8s.sh --self-test
#          validate deploy/kubernetes, then break copies of it in a
#          temporary directory, one fault each, and require every one to
#          fail: proof that the validation can say no.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# The Kubernetes versions validated against: the oldest we claim and the
# newest kubernetes-validate knows.
kube_versions=(1.29.0 1.37.0)
venv=${CACHEOFF_K8S_VENV:-/opt/cacheoff-k8s-venv}
validate_version=1.37.0
# kubernetes-validate and everything it pulls in, pinned.
pins=(
  "kubernetes-validate==$validate_version"
  attrs==26.1.0 importlib_resources==7.1.0 jsonschema==4.26.0
  jsonschema-specifications==2025.9.1 packaging==26.4 PyYAML==6.0.4
  referencing==0.37.0 rpds-py==2026.9.1 typing_extensions==4.16.0
)

ensure_venv() {
  if [ "$("$venv/bin/kubernetes-validate" --version 2>/dev/null)" = "$validate_version" ]; then
    return
  fi
  echo "== installing kubernetes-validate $validate_version (PyPI) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "${pins[@]}"
  "$venv/bin/pip" check -q >/dev/null
}

render_cmd=()
find_renderer() {
  if command -v kustomize >/dev/null; then
    render_cmd=(kustomize build)
  elif command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
    render_cmd=(kubectl kustomize)
  else
    echo "error: no kustomize: neither kustomize nor kubectl (with kustomize) is on PATH" >&2
    exit 1
  fi
}

# validate_tree DIR: every kustomization under DIR; returns 1 if any fails.
validate_tree() {
  local dir=$1 out failed=0 count=0 k rel file v
  out=$(mktemp -d)
  while IFS= read -r k; do
    rel=$(dirname "${k#"$dir"/}")
    [ "$rel" = . ] && rel=$(basename "$dir")
    file=$out/${rel//\//_}.yaml
    count=$((count + 1))
    if ! "${render_cmd[@]}" "$(dirname "$k")" >"$file" 2>"$file.err"; then
      echo "FAILED $rel: kustomize could not render it:"
      sed 's/^/  /' "$file.err"
      failed=1
      continue
    fi
    local ok=1
    for v in "${kube_versions[@]}"; do
      "$venv/bin/kubernetes-validate" --strict --quiet --no-warn -k "$v" "$file" || ok=0
    done
    "$venv/bin/python" "$repo/deploy/kubernetes-checks.py" "$file" || ok=0
    if [ $ok = 1 ]; then
      echo "ok $rel ($(grep -c '^kind:' "$file") objects; Kubernetes ${kube_versions[*]})"
    else
      echo "FAILED $rel"
      failed=1
    fi
  done < <(find "$dir" -name kustomization.yaml | sort)
  rm -rf "$out"
  if [ $count = 0 ]; then
    echo "FAILED: no kustomization.yaml under $dir"
    return 1
  fi
  return $failed
}

# Each fault: FILE (under deploy/kubernetes) | sed expression | what it
# breaks | what the failure must say (so a copy failing for another reason
# does not count).
faults=(
  "base/agents-job.yaml|s/backoffLimit: 0/backoffLimit: none/|a wrong type (schema)|'none' is not of type 'integer'"
  "base/coordinator-job.yaml|s/restartPolicy: Never/restartpolicy: Never/|an unknown field (strict schema)|'restartpolicy' was unexpected"
  "overlays/polymix3-10/kustomization.yaml|s/agents-patch.yaml/agent-patch.yaml/|a missing patch file (kustomize)|agent-patch.yaml: no such file"
  "overlays/polymix3-10/agents-patch.yaml|s/: 10$/: 11/|11 agents, 10 in --agents|the agents Job runs 0..10"
  "overlays/polymix3-10/coordinator-patch.yaml|/name: POD_NAMESPACE/,/fieldPath/d|AGENTS merged ahead of the POD_NAMESPACE it uses|env AGENTS uses \$(POD_NAMESPACE), not defined before it"
  "base/agents-job.yaml|/--runs=1/d|agents that never exit|agents must exit after the run"
  "base/agents-service.yaml|s/clusterIP: None/type: ClusterIP/|a Service that is not headless|must be headless"
  "base/kustomization.yaml|/networkpolicy.yaml/d|no NetworkPolicy|no NetworkPolicy selects the agent pods"
  "base/networkpolicy.yaml|/- from:/,/component: coordinator/c\    -|port 7070 open to all (no from)|admits the agents' port 7070 from anywhere (no from)"
  "base/networkpolicy.yaml|s/endPort: 7069/endPort: 7070/|the origin servers' range over port 7070|admits the agents' port 7070 from anywhere"
  "base/networkpolicy.yaml|s/- podSelector:/- namespaceSelector: {}\n          podSelector:/|the coordinator's label from any namespace|from ['namespaceSelector']"
  "base/networkpolicy.yaml|/- podSelector:/,/component: coordinator/{/app.kubernetes.io\/name/d}|any pod labelled coordinator|must name app.kubernetes.io/name too"
  "base/agents-job.yaml|/--fleet-dir/d|agents without credentials|the agent has no fleet credentials"
  "base/coordinator-job.yaml|s/^\( *\)- --out=.*/&\n\1- --insecure/|a coordinator with --insecure|--insecure: plaintext fleet links"
  "base/coordinator-job.yaml|s#mountPath: /etc/cacheoff-fleet#mountPath: /etc/cacheoff/fleet#|credentials mounted elsewhere than --fleet-dir|--fleet-dir=/etc/cacheoff-fleet is not in a Secret volume"
  "base/coordinator-job.yaml|s/secretName: cacheoff-fleet/secretName: cacheoff-fleet-2/|two Secrets|read different Secrets"
  "base/agents-job.yaml|/items:/,\$d|agents given every key|mounts every key of Secret cacheoff-fleet"
  "base/agents-job.yaml|s/key: agent.key/key: coordinator.key/|agents given the coordinator's key|gives the agent coordinator.key"
  "base/agents-job.yaml|/^ *fsGroup:/d|credentials the agents cannot read|unreadable by uid 65532 without an fsGroup"
  "base/agents-job.yaml|/--allow-target/d|agents without --allow-target|agents must pass --allow-target"
  "base/kustomization.yaml|/- ALLOW_TARGET=/d|ALLOW_TARGET not in the ConfigMap|has no key ALLOW_TARGET"
  "overlays/polymix3-10/kustomization.yaml|s#ALLOW_TARGET=10.0.0.0/8#ALLOW_TARGET=10.0.0.0/8,cache-under-test#|a name in ALLOW_TARGET|'cache-under-test' is not an address or CIDR"
)

self_test() {
  local tmp fault file expr what expect log
  validate_tree "$repo/deploy/kubernetes"
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  for fault in "${faults[@]}"; do
    IFS='|' read -r file expr what expect <<<"$fault"
    rm -rf "$tmp/kubernetes"
    cp -r "$repo/deploy/kubernetes" "$tmp/kubernetes"
    sed -i -e "$expr" "$tmp/kubernetes/$file"
    if cmp -s "$repo/deploy/kubernetes/$file" "$tmp/kubernetes/$file"; then
      echo "FAILED self-test: the fault '$what' changed nothing in $file"
      return 1
    fi
    log=$tmp/log
    if validate_tree "$tmp/kubernetes" >"$log" 2>&1; then
      cat "$log"
      echo "FAILED self-test: a copy with $what ($file) passed"
      return 1
    fi
    if ! grep -qF -- "$expect" "$log"; then
      cat "$log"
      echo "FAILED self-test: a copy with $what ($file) failed, but not saying '$expect'"
      return 1
    fi
    echo "rejected: $what ($file): $(grep -m1 -F -- "$expect" "$log" | sed 's/^[[:space:]]*//' | cut -c1-200)"
  done
  echo "self-test: all ${#faults[@]} broken copies rejected"
}

case "${1:-}" in
  -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
ensure_venv
find_renderer
echo "== kubernetes manifests: ${render_cmd[*]}, kubernetes-validate $validate_version"
if [ "${1:-}" = --self-test ]; then
  self_test
else
  validate_tree "$(realpath "${1:-deploy/kubernetes}")"
fi
