#!/usr/bin/env bash
# docs/scale-out.md's Kubernetes Indexed Job, checked without a cluster (none can be started here from
# the package registries: docs/scale-out.md says why). Extracts the manifest from there
# (between its e2e markers, so this fails when docs/scale-out.md changes), then:
#  1. validates it against the Kubernetes JSON schema, strictly (no unknown field), with
#     kubernetes-validate from PyPI (pinned; its schemas ship in the package, no download);
#  2. checks what the schema cannot: an Indexed Job whose completions equal the shard count N in
#     `--shard "$JOB_COMPLETION_INDEX/N"` (parallelism at most N), a Job's restartPolicy
#     (OnFailure or Never), mounts that name volumes, and an experiment file that exists;
#  3. runs the container's command once per completion index as the Job would (sh -c, with
#     JOB_COMPLETION_INDEX set; /experiments and /results mapped to temporary directories), merges
#     the shards and compares them byte for byte (diff -r) with a single-machine sweep.
# PREFIXSIM: the binary (default target/release/prefixsim). K8S_VENV: where the venv lives
# (default target/k8s-venv). Skips with a message when python3's venv or PyPI is unavailable.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefixsim="$(realpath "${PREFIXSIM:-$root/target/release/prefixsim}")"
venv="${K8S_VENV:-$root/target/k8s-venv}"
start=$(date +%s)
say() { echo "k8s-validate: $*"; }

if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1 \
    || ! "$venv/bin/pip" install -q kubernetes-validate==1.37.0 >/dev/null 2>&1; then
    say "skipped: could not install kubernetes-validate from PyPI into $venv"
    exit 0
  fi
fi

work="$(mktemp -d /tmp/prefixsim-k8s.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$root/.ci/readme-block.sh" k8s-job >"$work/job.yaml"

"$venv/bin/kubernetes-validate" --strict --quiet -k 1.37.0 "$work/job.yaml" \
  || { say "FAILED: docs/scale-out.md's Job manifest does not validate"; exit 1; }
say "docs/scale-out.md's Job validates against the Kubernetes 1.37 schema (strict)"

mkdir -p "$work/results" "$work/bin"
ln -s "$prefixsim" "$work/bin/prefixsim"
PATH="$work/bin:$PATH" "$venv/bin/python" - "$work" "$root" <<'EOF'
import os, re, subprocess, sys, yaml

work, root = sys.argv[1], sys.argv[2]
job = yaml.safe_load(open(os.path.join(work, "job.yaml")))
spec = job["spec"]
assert job["kind"] == "Job" and spec.get("completionMode") == "Indexed", "not an Indexed Job"
(container,) = spec["template"]["spec"]["containers"]
command = container["command"] + container["args"]
assert command[:2] == ["sh", "-c"], f"the container runs {command[:2]}, not sh -c"
script = command[2]
m = re.search(r'--shard "\$JOB_COMPLETION_INDEX/(\d+)"', script)
assert m, "the command has no --shard \"$JOB_COMPLETION_INDEX/N\""
n = int(m.group(1))
assert spec["completions"] == n, f"completions {spec['completions']} but --shard .../{n}"
assert spec["parallelism"] <= n, f"parallelism {spec['parallelism']} over {n} shards"
policy = spec["template"]["spec"].get("restartPolicy")
assert policy in ("OnFailure", "Never"), f"a Job's restartPolicy is OnFailure or Never: {policy}"
mounts = {v["mountPath"]: v["name"] for v in container["volumeMounts"]}
volumes = {v["name"] for v in spec["template"]["spec"]["volumes"]}
assert set(mounts.values()) <= volumes, f"a mount names no volume: {mounts}"
experiment = re.search(r"(/experiments/\S+\.toml)", script).group(1)
local = os.path.join(root, experiment.lstrip("/"))
assert os.path.isfile(local), f"{experiment}: no such file in the repository"
# Each completion index as its pod would run it; the mounts become local directories.
script = script.replace("/experiments/", os.path.join(root, "experiments") + "/")
script = script.replace("/results/", os.path.join(work, "results") + "/")
for index in range(n):
    env = dict(os.environ, JOB_COMPLETION_INDEX=str(index))
    subprocess.run(["sh", "-c", script], env=env, check=True, capture_output=True)
print(f"k8s-validate: ran the pod command for indexes 0..{n - 1} ({experiment})")
with open(os.path.join(work, "experiment"), "w") as f:
    f.write(local)
EOF
"$prefixsim" merge "$work"/results/shard-* --out "$work/results/all" >/dev/null
"$prefixsim" sweep "$(cat "$work/experiment")" --out "$work/single" --jobs 2 >/dev/null 2>&1
if diff -r "$work/single" "$work/results/all"; then
  say "PASSED: the Job's shards merged = one machine, byte for byte ($(($(date +%s) - start)) s)"
else
  say "FAILED: the merged shards differ from a single-machine sweep"
  exit 1
fi
