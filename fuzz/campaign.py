#!/usr/bin/env python3
"""A bounded campaign of hostile input against the prefixsim binary, from the outside.

Usage: fuzz/campaign.py BIN REPO [--minutes M] [--jobs J] [--seed S]

Runs, in rounds until the time is up, every class of hostile input and reports each run whose
exit code is not 0 or 2 (1 = a bug, 101 = a panic, 134 = an abort, timeout = a hang); exits 1
if there was one. The rounds are drawn from --seed; the number of rounds depends on the time.
  mutate   experiment files mutated (bytes, lines, values swapped for extremes)
  keys     every key of a rendered experiment set to an extreme, in several policy contexts
  zero     /dev/zero, a FIFO, a sparse 3 GiB file and a directory for every file argument
  columns  result files of a run and a sweep with cells corrupted, read by plot/report/export
"""
import argparse, os, random, re, shutil, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

EXTREMES = ["0", "-1", "1e308", "nan", "inf", "-inf", '"99999999h"', "4294967295",
            "18446744073709551615", '"1e308s"', '""', '"x"', "1.5", "[]", "{}", "true"]
CONTEXTS = [
    [],
    ["cache.policy=every_block"],
    ["cache.policy=openai"],
    ["cache.policy=gemini"],
    ["cache.policy=vllm"],
    ["cache.policy=sglang"],
    ["cache.policy=vllm", "workload.parent_tokens=300000", "model=claude-sonnet-4-5"],
    ["workload.kind=subagent"],
    ["parent.advance=true"],
    ['strategies=["eager","wait_first(max_wait=5s)","stagger(interval=1s)"]'],
]
SAFE = ["--set", "replications=2", "--set", "limits.max_requests=2000000",
        "--set", "limits.max_memory_mb=2048"]
TIMEOUT = 40


def run(cmd, cwd, timeout=TIMEOUT):
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout)
        return p.returncode, p.stderr.decode("utf-8", "replace")[-600:], time.time() - t
    except subprocess.TimeoutExpired:
        return "timeout", "", timeout


def keys_of(binary, repo, tmp):
    """Every dotted key of the default experiment as the binary renders it (run --out DIR)."""
    d = os.path.join(tmp, "render")
    subprocess.run([binary, "run", "experiments/default.toml", "--set", "replications=2",
                    "--out", d, "--force"], cwd=repo, capture_output=True)
    import json
    m = json.load(open(os.path.join(d, "manifest.json")))
    text = m.get("experiment", "")
    keys, section = [], ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[") and not s.startswith("[["):
            section = s.strip("[]").strip() + "."
        elif "=" in s and not s.startswith("#"):
            k = s.split("=", 1)[0].strip().strip('"')
            keys.append(section + k)
    extra = ["server.gpu_usd_per_hour", "server.decode_step", "server.decode_per_running",
             "server.decode_per_ktok", "server.prefill_rate", "server.replicas",
             "model_params.long_context_input_multiplier",
             "model_params.long_context_output_multiplier", "openai.overflow_per_minute",
             "rate_limits.rpm", "rate_limits.itpm", "rate_limits.otpm", "limits.horizon",
             "limits.max_events", "latency.draw", "cache.capacity_tokens"]
    return sorted(set(k for k in keys + extra if not k.startswith("sweep")))


def mutate(text, rng):
    lines = text.splitlines()
    op = rng.randrange(6)
    if op == 0 and text:
        b = bytearray(text.encode())
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 1 and lines:
        del lines[rng.randrange(len(lines))]
    elif op == 2 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif op == 3:
        nums = [m for m in re.finditer(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?", text)]
        if nums:
            m = rng.choice(nums)
            text = text[:m.start()] + rng.choice(EXTREMES) + text[m.end():]
            return text.encode()
    elif op == 4 and text:
        return text.encode()[: rng.randrange(len(text))]
    else:
        strs = [m for m in re.finditer(r'"[^"\n]*"', text)]
        if strs:
            m = rng.choice(strs)
            text = text[:m.start()] + rng.choice(EXTREMES) + text[m.end():]
            return text.encode()
    return ("\n".join(lines) + "\n").encode()


def tasks_mutate(binary, repo, tmp, rng, n):
    files = [os.path.join(repo, "experiments", f) for f in os.listdir(os.path.join(repo, "experiments"))]
    out = []
    for i in range(n):
        src = rng.choice(files)
        p = os.path.join(tmp, f"mut{i}.toml")
        open(p, "wb").write(mutate(open(src).read(), rng))
        cmd = rng.choice(["run", "sweep"])
        args = [binary, cmd, p] + SAFE + (["--out", os.path.join(tmp, f"mut{i}.out")] if cmd == "sweep" else [])
        out.append(("mutate", args))
    return out


def tasks_keys(binary, repo, keys, rng, n):
    out = []
    for _ in range(n):
        ctx = rng.choice(CONTEXTS)
        key, value = rng.choice(keys), rng.choice(EXTREMES)
        sets = sum((["--set", s] for s in ctx), []) + ["--set", f"{key}={value}"]
        out.append(("keys", [binary, "run", "experiments/default.toml"] + SAFE + sets))
    return out


def tasks_zero(binary, repo, tmp):
    """/dev/zero, a FIFO, a sparse file and a directory as every file argument."""
    base = os.path.join(tmp, "zero-src")
    if not os.path.exists(base):
        subprocess.run([binary, "sweep", "experiments/hold_vs_prefix_size.toml", "--set",
                        "replications=2", "--out", base], cwd=repo, capture_output=True)
        subprocess.run([binary, "tune", "experiments/default.toml", "--param", "max_wait",
                        "--set", "replications=4", "--out", base + "-tune"], cwd=repo,
                       capture_output=True)
    fifo = os.path.join(tmp, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    sparse = os.path.join(tmp, "sparse")
    if not os.path.exists(sparse):
        with open(sparse, "wb") as f:
            f.truncate(3 << 30)
    bads = {"zero": "/dev/zero", "fifo": fifo, "sparse": sparse, "dir": tmp}
    out = []
    for name, bad in bads.items():
        for member in ["summary.csv", "runs.csv", "manifest.json", "sweep.journal",
                       "hold.csv", "histograms/latency.hlog"]:
            for src in [base]:
                d = os.path.join(tmp, f"z-{name}-{member.replace('/', '_')}")
                if not os.path.exists(d):
                    shutil.copytree(src, d, symlinks=True)
                    target = os.path.join(d, member)
                    if os.path.isdir(target):
                        shutil.rmtree(target)
                    elif os.path.exists(target):
                        os.remove(target)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    os.symlink(bad, target)
                for cmd in (["plot", d, "--out", d + ".plot"], ["report", d],
                            ["export", d], ["merge", d, "--out", d + ".merged"],
                            ["sweep", "experiments/hold_vs_prefix_size.toml", "--out", d,
                             "--resume", "--set", "replications=2"]):
                    out.append(("zero", [binary] + cmd))
        t = os.path.join(tmp, f"zt-{name}")
        if not os.path.exists(t):
            os.makedirs(t)
            os.symlink(bad, os.path.join(t, "tune.json"))
        out += [("zero", [binary, "plot", t, "--out", t + ".plot"]), ("zero", [binary, "report", t])]
        out += [("zero", [binary] + c) for c in (
            ["run", bad], ["sweep", bad, "--out", os.path.join(tmp, "zs-" + name)],
            ["run", "experiments/default.toml", "--latency", bad],
            ["run", "experiments/default.toml", "--set", f"latency.from={bad}"],
            ["run", "experiments/default.toml", "--set", f'workload.turns="empirical(file={bad})"'],
            ["calibrate", bad], ["replay", bad], ["replay", bad, "--format", "mooncake"],
            ["tune", bad, "--param", "max_wait"])]
    return out


def tasks_columns(binary, repo, tmp, rng, n):
    base = os.path.join(tmp, "zero-src")
    out = []
    for i in range(n):
        d = os.path.join(tmp, f"col{i}")
        shutil.copytree(base, d)
        f = os.path.join(d, rng.choice(["summary.csv", "runs.csv", "hold.csv"]))
        if not os.path.exists(f):
            continue
        rows = open(f).read().split("\n")
        r = rng.randrange(1, max(2, len(rows) - 1))
        cells = rows[r].split(",")
        c = rng.randrange(len(cells))
        cells[c] = rng.choice(["NaN", "inf", "-inf", "1e308", "-1", "", "x", "1e31", "0",
                               "18446744073709551616", '"', "\u00e9"])
        rows[r] = ",".join(cells)
        open(f, "w").write("\n".join(rows))
        cmd = rng.choice([["plot", d, "--out", d + ".plot", "--format", "svg"], ["report", d],
                          ["export", d]])
        out.append(("columns", [binary] + cmd))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary"); ap.add_argument("repo")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    binary = os.path.abspath(a.binary)
    tmp = tempfile.mkdtemp(prefix="campaign-")
    keys = keys_of(binary, a.repo, tmp)
    deadline = time.time() + a.minutes * 60
    print(f"campaign: seed {a.seed}, {a.minutes} minutes, {a.jobs} jobs, {len(keys)} keys", flush=True)
    counts, bad, slow = {}, [], []
    first = True
    while time.time() < deadline:
        tasks = tasks_zero(binary, a.repo, tmp) if first else []
        first = False
        tasks += tasks_keys(binary, a.repo, keys, rng, 60)
        tasks += tasks_mutate(binary, a.repo, tmp, rng, 30)
        tasks += tasks_columns(binary, a.repo, tmp, rng, 10)
        with ThreadPoolExecutor(a.jobs) as ex:
            futs = [(k, c, ex.submit(run, c, a.repo)) for k, c in tasks]
            for kind, cmd, fu in futs:
                rc, err, took = fu.result()
                counts.setdefault(kind, {}).setdefault(rc, 0)
                counts[kind][rc] += 1
                if rc not in (0, 2):
                    bad.append((kind, rc, cmd, err))
                    print(f"BAD {kind} rc={rc}: {' '.join(cmd)}\n    {err.strip()[-300:]}", flush=True)
                elif took > 20:
                    slow.append((kind, took, cmd))
        shutil.rmtree(os.path.join(tmp, "render"), ignore_errors=True)
        for p in os.listdir(tmp):
            if p.startswith(("mut", "col")):
                shutil.rmtree(os.path.join(tmp, p), ignore_errors=True) if os.path.isdir(os.path.join(tmp, p)) else os.remove(os.path.join(tmp, p))
    print("runs by class and exit code:", counts)
    print(f"{len(bad)} runs exited other than 0 or 2; {len(slow)} took over 20 s")
    for s in slow[:10]:
        print("slow:", s[0], f"{s[1]:.0f}s", " ".join(s[2]))
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
