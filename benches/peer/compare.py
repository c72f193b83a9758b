#!/usr/bin/env python3
"""Run prefixsim and the SimPy peer on the same experiment, print their means side by side.

    python compare.py [--experiment fanout.toml] [--replications N] [--prefixsim PATH] [--runs K]

Both run as whole processes on one core (this script pins itself to its first allowed core
where the OS lets it, and the sides inherit it; prefixsim with `--jobs 1`), K times each (default 3), alternating, and the speed is each side's median run: a
prefixsim run of the file is about 40 ms of CPU, a sample a busy virtual machine moves by a
quarter either way, and one run of each made the ratio swing from 61x to 96x. Every prefixsim
run must print the same bytes. Per strategy: cost, makespan, cache read and write tokens per replication, each
side's mean, the relative difference (peer vs prefixsim) and the half-width of its 95%
confidence interval (what sampling alone can explain). Then each side's requests per second of
CPU time and of wall-clock time, and their ratio. Exit code 1 when cost, makespan or cache
reads differ by more than 3%. A metric whose sampling half-width is itself above 3% cannot be
judged at that many replications: it is marked with the replications that would resolve it and
not counted as a disagreement (at the file's 1,000, the makespan's half-width is about 3-4%;
`--replications 5000` resolves every metric).
"""

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOLERANCE = 0.03
CHECKED = ("cost", "makespan", "read")

# (peer metric, label, prefixsim mean, prefixsim 95% half-width or None, number format)
METRICS = [
    ("cost", "cost $", lambda r: r["cost_usd"], lambda r: r["cost_usd_ci95"], ",.4f"),
    ("makespan", "makespan s", lambda r: r["makespan_s"], lambda r: r["makespan_s_ci95"], ",.2f"),
    ("read", "cache read", lambda r: r["tokens"]["cache_read"], None, ",.0f"),
    ("write", "cache write", lambda r: r["tokens"]["cache_write"], None, ",.0f"),
]


def pin_to_one_core():
    """Pin this process to its first allowed core, which the sides it starts inherit; the core,
    or None where the OS has no affinity call. Not `taskset -c 0 CMD`: its own start-up (about
    0.7 ms of CPU here, 2% of a prefixsim run) would be timed as the side's."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def timed(cmd):
    """Run `cmd`; its stdout, CPU seconds (user + sys) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.stdout, cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default=os.path.join(HERE, "fanout.toml"))
    ap.add_argument("--replications", type=int, help="override the file's (e.g. 20: quick)")
    ap.add_argument("--prefixsim", default=os.path.join(ROOT, "target/release/prefixsim"))
    ap.add_argument("--runs", type=int, default=3, help="runs of each side; the median is timed")
    args = ap.parse_args()
    if args.runs < 1:
        sys.exit(f"compare.py: --runs must be at least 1, not {args.runs}")
    if not os.access(args.prefixsim, os.X_OK):
        sys.exit(f"compare.py: no prefixsim binary at {args.prefixsim}: cargo build --release")

    core = pin_to_one_core()
    ps_cmd = [args.prefixsim, "run", args.experiment, "--jobs", "1", "--json"]
    peer_cmd = [sys.executable, os.path.join(HERE, "fanout.py"), args.experiment, "--json"]
    if args.replications:
        ps_cmd += ["--set", f"replications={args.replications}"]
        peer_cmd += ["--replications", str(args.replications)]
    ps_runs, peer_runs = [], []
    for _ in range(args.runs):
        ps_runs.append(timed(ps_cmd))
        peer_runs.append(timed(peer_cmd))
    if len({out for out, _, _ in ps_runs}) != 1:
        sys.exit("compare.py: prefixsim printed different bytes from one run to the next")
    ps, peer = json.loads(ps_runs[0][0]), json.loads(peer_runs[0][0])
    n = peer["replications"]
    assert ps["replications"] == n, "both sides must run the same replications"

    failures = compare_means(ps, peer, n)
    ps_requests = sum(r["requests"] for r in ps["results"]) * n
    speed(ps_requests, ps_runs, peer, peer_runs, core)
    exact = compare_constant(args)
    failures, unresolved = failures
    if failures or exact:
        print("\nDISAGREE: " + ", ".join(failures + exact))
        sys.exit(1)
    checked = f"within {TOLERANCE:.0%} on cost, makespan and cache reads"
    if unresolved:
        checked += f" where {n} replications resolve {TOLERANCE:.0%} (not: {', '.join(unresolved)})"
    print(f"\nagree {checked}, and exactly on constant draws")

def compare_means(ps, peer, n):
    """Print the side-by-side table; return (the checked metrics that differ by more than 3%,
    those whose sampling half-width is too wide to tell)."""
    print(f"{ps['name']}: {n} replications, means per replication "
          f"(diff = peer / prefixsim - 1; +- = 95% half-width of diff from sampling)\n")
    head = f"{'strategy':<26}{'metric':<13}{'prefixsim':>14}{'SimPy peer':>14}{'diff':>9}{'+-':>8}"
    print(head)
    print("-" * len(head))
    failures, unresolved = [], []
    peer_by = {r["strategy"]: r for r in peer["results"]}
    for r in ps["results"]:
        p = peer_by[r["strategy"]]
        for key, label, mean, ci95, fmt in METRICS:
            a, b = mean(r), p[key]["mean"]
            se_peer = p[key]["sd"] / math.sqrt(n)
            # prefixsim's --json has a CI for cost and makespan; for tokens take the peer's
            # spread for both sides (the same workload).
            se_ps = ci95(r) / 1.96 if ci95 else se_peer
            diff = b / a - 1 if a else 0.0
            noise = 1.96 * math.hypot(se_ps, se_peer) / a if a else 0.0
            flag = ""
            if key in CHECKED and noise > TOLERANCE:
                # The half-width shrinks as 1/sqrt(n): the replications that bring it to 2/3
                # of the tolerance, so that a 3% difference would stand out of the noise.
                need = math.ceil(n * (noise / (TOLERANCE * 2 / 3)) ** 2 / 100) * 100
                flag = f"  (+- over 3%: ~{need} replications resolve it)"
                unresolved.append(f"{r['strategy']} {label}")
            elif key in CHECKED and abs(diff) > TOLERANCE:
                flag = "  <-- over 3%"
                failures.append(f"{r['strategy']} {label}")
            print(f"{r['strategy']:<26}{label:<13}{a:>14{fmt}}{b:>14{fmt}}"
                  f"{diff:>+9.2%}{noise:>8.2%}{flag}")
    return failures, unresolved


# Every distribution a constant: both models are deterministic and must agree exactly. Each
# variant replaces whole `key = value` lines of the experiment file.
CONSTANT = {"output_tokens": '"301"', "tool_latency": '"2s"', "tool_result_tokens": '"500"',
            "prefill_rate": "20000", "replications": "2"}
VARIANTS = [
    ("the hold covers agent 0's first token", {}),
    ("the 5 s cap fires first", {"prefill_rate": "10000"}),
    ("entries expire between turns", {"tool_latency": '"299s"'}),
]


def compare_constant(args):
    """Run both on constant-draw variants of the experiment; the variants that differ."""
    text = open(args.experiment).read()
    failures = []
    print("\nconstant draws (exact agreement expected):")
    with tempfile.TemporaryDirectory() as tmp:
        for name, change in VARIANTS:
            variant = text
            for key, value in {**CONSTANT, **change}.items():
                variant, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", variant)
                assert n == 1, f"{args.experiment}: no single `{key} =` line to replace"
            path = os.path.join(tmp, "constant.toml")
            with open(path, "w") as f:
                f.write(variant)
            ps = json.loads(timed([args.prefixsim, "run", path, "--jobs", "1", "--json"])[0])
            peer = json.loads(timed([sys.executable, os.path.join(HERE, "fanout.py"), path,
                                     "--json"])[0])
            differ = []
            for r, p in zip(ps["results"], peer["results"]):
                for key, label, mean, _, _ in METRICS:
                    if not math.isclose(mean(r), p[key]["mean"], rel_tol=1e-9, abs_tol=1e-6):
                        differ.append(f"{r['strategy']} {label} {mean(r)} vs {p[key]['mean']}")
            print(f"  {name}: " + ("identical" if not differ else "DIFFER: " + "; ".join(differ)))
            failures += [f"constant draws, {name}"] if differ else []
    return failures


def median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def speed(ps_requests, ps_runs, peer, peer_runs, core):
    """Each side's median CPU and wall time over its runs, and their ratios."""
    requests = peer["requests"]
    assert requests == ps_requests, f"request counts differ: {ps_requests} vs {requests}"
    runs = len(ps_runs)
    where = f"on core {core}" if core is not None else "unpinned (no affinity call here)"
    print(f"\nspeed {where}, whole process ({requests:,} simulated requests), median of "
          f"{runs} run{'s' if runs > 1 else ''} each:")
    print(f"{'':<22}{'CPU s':>8}{'wall s':>8}{'requests/CPU s':>16}{'requests/wall s':>17}"
          f"  CPU s of each run")
    rows = [("prefixsim --jobs 1", ps_runs), (f"SimPy {peer['simpy']}", peer_runs)]
    medians = []
    for name, samples in rows:
        cpu, wall = median([c for _, c, _ in samples]), median([w for _, _, w in samples])
        medians.append((cpu, wall))
        each = " ".join(f"{c:.3f}" for _, c, _ in samples)
        print(f"{name:<22}{cpu:>8.3f}{wall:>8.3f}{requests / max(cpu, 1e-9):>16,.0f}"
              f"{requests / wall:>17,.0f}  {each}")
    (ps_cpu, ps_wall), (peer_cpu, peer_wall) = medians
    print(f"ratio (prefixsim / SimPy): {peer_cpu / max(ps_cpu, 1e-9):.0f}x per CPU second, "
          f"{peer_wall / ps_wall:.0f}x wall; the peer's simulation alone took "
          f"{peer['simulate_s']:.2f} s wall (target: 100x)")
    if runs > 1:
        ps_cpus, peer_cpus = [c for _, c, _ in ps_runs], [c for _, c, _ in peer_runs]
        print(f"  each side's fastest runs: {min(peer_cpus) / max(min(ps_cpus), 1e-9):.0f}x; "
              f"slowest: {max(peer_cpus) / max(max(ps_cpus), 1e-9):.0f}x (how far this "
              f"machine's noise moves the ratio)")


if __name__ == "__main__":
    main()
