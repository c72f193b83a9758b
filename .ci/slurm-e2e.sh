#!/usr/bin/env bash
# End to end on a real Slurm: installs Debian's slurm and munge, starts a single-node cluster on
# this machine (munged, slurmctld, slurmd, all private to a temporary directory), submits the
# docs/scale-out.md's sweep script ("Slurm job array", extracted between its e2e markers, so this fails
# when docs/scale-out.md changes) as the job array it declares, then docs/scale-out.md's merge job, waits,
# and compares the merged result byte for byte (diff -r) with a single-machine `prefixsim sweep`
# of the same experiment. Stops the daemons it started.
#
# Needs root and a working apt-get (skips with a message otherwise). PREFIXSIM: the binary (default
# target/release/prefixsim). docs/scale-out.md's own experiment is swept: it takes about a second.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefixsim="$(realpath "${PREFIXSIM:-$root/target/release/prefixsim}")"
start=$(date +%s)
say() { echo "slurm-e2e: $*"; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "skipped: needs root and apt-get to install Debian's slurm and munge"
  exit 0
fi
work="$(mktemp -d /tmp/prefixsim-slurm-e2e.XXXXXX)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
  || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge from Debian"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq slurm-wlm munge; } >"$work/apt.log" 2>&1; then
    tail -n 20 "$work/apt.log"
    say "skipped: apt-get could not install slurm-wlm and munge (its log's tail above)"
    rm -rf "$work"
    exit 0
  fi
fi
stop() {
  # Only the daemons this script started, by the pids they wrote.
  for f in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munged.pid; do
    if [ -s "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  sleep 1
  rm -rf "$work"
}
trap stop EXIT
dump_logs() {
  for f in "$work"/*.log "$work"/run/slurm-*.out; do
    if [ -f "$f" ]; then echo "--- $f"; tail -n 30 "$f"; fi
  done
}

mkdir -p "$work/run" "$work/bin" "$work/state" "$work/spool"
chmod 711 "$work" # munged wants its socket's directory searchable by all
# docs/scale-out.md's script and merge command, as written there.
"$root/.ci/readme-block.sh" slurm-sweep >"$work/run/sweep.sh"
"$root/.ci/readme-block.sh" slurm-merge | sed '/^# or/,$d' >"$work/run/merge.sh"
grep -q 'prefixsim sweep' "$work/run/sweep.sh" || { say "docs/scale-out.md: no Slurm sweep script"; exit 1; }
grep -q 'prefixsim merge' "$work/run/merge.sh" || { say "docs/scale-out.md: no Slurm merge job"; exit 1; }
range=$(sed -n 's/^#SBATCH --array=\([0-9]*\)-\([0-9]*\).*/\1 \2/p' "$work/run/sweep.sh")
[ -n "$range" ] || { say "docs/scale-out.md: the sweep script declares no --array=A-B"; exit 1; }
shards=$(($(echo "$range" | cut -d' ' -f2) - $(echo "$range" | cut -d' ' -f1) + 1))
experiment="$(grep -o 'experiments/[a-z_]*\.toml' "$work/run/sweep.sh" | head -n 1)"
[ -n "$experiment" ] || { say "docs/scale-out.md: the sweep script names no experiments/*.toml"; exit 1; }
cp -r "$root/experiments" "$work/run/experiments"
ln -s "$prefixsim" "$work/bin/prefixsim"
export PATH="$work/bin:$PATH"

# munge: its own key, socket and files, run as root.
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge.key"
munged --force --socket="$work/munge.sock" --key-file="$work/munge.key" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munged.seed" \
  || { say "munged did not start"; dump_logs; exit 1; }

# A minimal single-node slurm.conf: this host, 2 CPUs, cons_tres, no accounting.
host="$(hostname -s)"
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=prefixsim-e2e
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=e2e Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || { say "slurmctld did not start"; dump_logs; exit 1; }
slurmd -f "$SLURM_CONF" || { say "slurmd did not start"; dump_logs; exit 1; }
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 1
done
sinfo -h -o %T | grep -qx idle || { say "the node did not come up"; dump_logs; exit 1; }
say "cluster up ($host, 2 CPUs) after $(($(date +%s) - start)) s"

# docs/scale-out.md's script, submitted as written. The node has 2 CPUs, so the one override is
# --cpus-per-task=1 on the command line (it wins over the script's #SBATCH 4): two shards at once.
cd "$work/run"
job_id() { sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p'; }
ARRAY_JOB_ID=$(sbatch --cpus-per-task=1 sweep.sh | job_id)
merge=$(ARRAY_JOB_ID="$ARRAY_JOB_ID" bash merge.sh | job_id)
[ -n "$ARRAY_JOB_ID" ] && [ -n "$merge" ] || { say "sbatch refused a job"; dump_logs; exit 1; }
say "submitted array job $ARRAY_JOB_ID and merge job $merge"
# Wait (at most 5 min each) until every task of a job has reached a final state: the array
# first (a failed shard leaves the merge pending forever: cancel it and stop), then the merge. A
# failed query (slurmctld busy) counts as not yet.
finished() { # job id, number of tasks
  local out
  out=$(scontrol -o show job "$1" 2>/dev/null) || return 1
  [ "$(grep -cE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)' <<<"$out")" -ge "$2" ]
}
wait_for() {
  for _ in $(seq 300); do
    finished "$1" "$2" && return 0
    sleep 1
  done
}
wait_for "$ARRAY_JOB_ID" "$shards"
scontrol -o show job "$ARRAY_JOB_ID" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c \
  | sed 's/^/  array tasks: /'
tasks=$(scontrol -o show job "$ARRAY_JOB_ID" | grep -c 'JobState=COMPLETED' || true)
if [ "$tasks" != "$shards" ]; then
  scancel "$merge"
  say "FAILED: $tasks of $shards shards completed"
  dump_logs
  exit 1
fi
wait_for "$merge" 1
merge_state=$(scontrol -o show job "$merge" | grep -o 'JobState=[A-Z_]*')
echo "  merge: $merge_state"
if [ "$merge_state" != JobState=COMPLETED ]; then
  say "FAILED: the merge job did not complete"
  dump_logs
  exit 1
fi

# The same sweep on one machine; nothing may differ (the merged journal included).
prefixsim sweep "$experiment" --out "$work/single" --jobs 2 >/dev/null 2>&1
if diff -r "$work/single" results/hold/all; then
  say "PASSED: $shards shards on Slurm, merged = one machine, byte for byte" \
    "($(find results/hold/all -type f | wc -l) files; $(($(date +%s) - start)) s in all)"
else
  say "FAILED: the merged shards differ from a single-machine sweep"
  exit 1
fi
