#!/usr/bin/env python3
"""An independent SimPy model of prefixsim's fork fan-out (benches/peer/README.md).

Written from prefixsim's documentation (docs/experiments.md, docs/model.md,
docs/cache.md, docs/anthropic.md), not from its Rust code: agents are SimPy processes, the
prefix cache is a dict of entries keyed by the prefix's identity, and every rule below names the
page it comes from. It reads the same experiment TOML as `prefixsim run` and prints, per
strategy, the means over replications of what `prefixsim run --json` reports.

    python fanout.py fanout.toml [--replications N] [--json]
"""

import argparse
import json
import math
import random
import re
import sys
import time
import tomllib

import simpy

# --- Experiment file -------------------------------------------------------------------------

# Model presets this peer knows (Anthropic's pricing page and the prompt caching page's minimum
# cacheable lengths): input and output USD per million tokens, read multiplier, minimum length.
PRESETS = {
    "claude-sonnet-4.6": (3.0, 15.0, 0.1, 1024),
    "claude-sonnet-4.5": (3.0, 15.0, 0.1, 1024),
    "claude-opus-4.6": (5.0, 25.0, 0.1, 1024),
    "claude-haiku-4.5": (1.0, 5.0, 0.1, 4096),
}
WRITE_5M, WRITE_1H = 1.25, 2.0  # the write price multipliers (prompt caching page)

# docs/model.md, "Named assumptions": the parent's prefix is 30% tools, 10% system, 60% history.
TOOLS_SHARE, SYSTEM_SHARE = 0.3, 0.1
LOOKBACK = 20  # a breakpoint checks itself and the 19 positions before it (docs/cache.md)
Z90 = 1.2815515655446004  # the standard normal's 90th percentile

# The keys this peer models; anything else is refused rather than silently ignored.
KNOWN = {
    "": {"name", "question", "model", "seed", "replications", "strategies", "cache",
         "workload", "latency"},
    "cache": {"policy", "ttl"},
    "workload": {"kind", "agents", "concurrency", "parent_tokens", "parent_warm", "brief_tokens",
                 "task_tokens", "turns", "output_tokens", "tool_latency", "tool_result_tokens",
                 "output_max_tokens", "tool_result_max_tokens"},
    "latency": {"overhead", "prefill_rate", "cached_rate", "decode_rate", "ready_delay"},
}

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


class BadInput(Exception):
    """Input this peer cannot run: the message names the key and the value."""


def seconds(key, text):
    """A duration string ("500ms", "2s", "5m") in seconds."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", str(text))
    if not m or (m.group(2) not in UNITS and not (m.group(2) == "" and float(m.group(1)) == 0)):
        raise BadInput(f"`{key}`: not a duration: {text!r}")
    return float(m.group(1)) * UNITS.get(m.group(2), 0.0)


def dist(key, value, duration):
    """A sampler `f(rng) -> float` for a distribution string (docs/experiments.md, "Values")."""
    num = (lambda s: seconds(key, s)) if duration else (lambda s: float(s))
    if isinstance(value, (int, float)):
        return lambda rng, v=float(value): v
    m = re.fullmatch(r"\s*(\w+)\((.*)\)\s*", value)
    if not m:
        v = num(value)
        return lambda rng: v
    name, args = m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()]
    named = dict(a.split("=", 1) for a in args if "=" in a)
    pos = [a for a in args if "=" not in a]
    try:
        if name == "const":
            v = num(pos[0] if pos else named["x"])
            return lambda rng: v
        if name == "lognormal":
            med, p90 = num(named.get("median", pos[0] if pos else None)), num(named["p90"])
            mu, sigma = math.log(med), math.log(p90 / med) / Z90
            return lambda rng: rng.lognormvariate(mu, sigma)
        if name == "uniform":
            lo = num(named.get("low", pos[0] if pos else None))
            hi = num(named.get("high", pos[1] if len(pos) > 1 else None))
            return lambda rng: rng.uniform(lo, hi)
        if name == "exp":
            mean = num(named.get("mean", pos[0] if pos else None))
            return lambda rng: rng.expovariate(1.0 / mean)
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise BadInput(f"`{key}`: malformed distribution {value!r} ({e})") from e
    raise BadInput(f"`{key}`: distribution {name!r} is not modelled by the peer")


def need(table, key, duration):
    """The sampler of `key`, which the peer needs the file to give (it has no presets)."""
    name = key.split(".")[-1]
    if name not in table:
        raise BadInput(f"`{key}` is required by the peer (it has no default for it)")
    return dist(key, table[name], duration)


def count(sampler):
    """Counts drawn from a distribution are rounded to whole numbers (docs/experiments.md, "Values")."""
    return lambda rng: int(math.floor(sampler(rng) + 0.5))


def capped(sampler, table, key):
    """A count sampler held to at most `key`'s value when the file gives one (no cap otherwise),
    applied after rounding, as prefixsim applies `output_max_tokens` and `tool_result_max_tokens`."""
    name = key.split(".")[-1]
    if name not in table:
        return sampler
    cap = table[name]
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise BadInput(f"`{key}` = {cap!r}: expected a whole number of tokens, at least 1")
    return lambda rng: min(sampler(rng), cap)


def strategy(label):
    """("eager"|"wait_first"|"sequential"|"stagger", parameter seconds) from a label."""
    s = label.replace(" ", "")
    if s in ("eager", "sequential"):
        return (s, 0.0)
    m = re.fullmatch(r"wait_first(?:\(max_wait=([^,)]+)\))?", s)
    if m:
        return ("wait_first", seconds("strategies", m.group(1) or "5s"))
    m = re.fullmatch(r"stagger(?:\(interval=([^)]+)\))?", s)
    if m:
        return ("stagger", seconds("strategies", m.group(1) or "1s"))
    raise BadInput(f"`strategies`: {label!r} is not modelled by the peer")


def check_keys(doc):
    for table, keys in KNOWN.items():
        part = doc.get(table, {}) if table else doc
        for k in part:
            if k not in keys:
                where = f"{table}.{k}" if table else k
                raise BadInput(f"`{where}` is not modelled by the peer")


class Config:
    """The parts of an experiment file the fork fan-out needs, with prefixsim's defaults."""

    def __init__(self, doc, replications=None):
        check_keys(doc)
        w, lat, cache = doc.get("workload", {}), doc.get("latency", {}), doc.get("cache", {})
        if w.get("kind", "fork") != "fork" or w.get("parent_warm", False):
            raise BadInput("`workload.kind`/`parent_warm`: the peer models a cold `fork` only")
        if cache.get("policy", "anthropic") != "anthropic":
            raise BadInput(f"`cache.policy`: {cache['policy']!r} is not modelled by the peer")
        model = doc.get("model", "claude-sonnet-4.5")
        if model not in PRESETS:
            raise BadInput(f"`model`: {model!r} is not among the peer's presets")
        self.input_usd, self.output_usd, self.read_mult, self.min_tokens = PRESETS[model]
        self.seed = int(doc.get("seed", 42))
        self.replications = replications or int(doc.get("replications", 100))
        self.strategies = [(label, strategy(label)) for label in doc.get("strategies", [])]
        self.ttl = seconds("cache.ttl", cache.get("ttl", "5m"))
        self.agents = int(w.get("agents", 10))
        self.concurrency = int(w.get("concurrency", 16))
        self.parent_tokens = int(w.get("parent_tokens", 50000))
        self.brief_tokens = int(w.get("brief_tokens", 3000))
        self.task_tokens = int(w.get("task_tokens", 150))
        self.turns = count(dist("workload.turns", w.get("turns", 1), False))
        self.output = capped(count(need(w, "workload.output_tokens", False)), w,
                             "workload.output_max_tokens")
        self.tool_latency = need(w, "workload.tool_latency", True)
        self.tool_result = capped(count(need(w, "workload.tool_result_tokens", False)), w,
                                  "workload.tool_result_max_tokens")
        # The peer has no latency presets: every rate is given in the file.
        self.overhead = need(lat, "latency.overhead", True)
        self.prefill_rate = need(lat, "latency.prefill_rate", False)
        self.cached_rate = need(lat, "latency.cached_rate", False)
        self.decode_rate = need(lat, "latency.decode_rate", False)
        self.ready_delay = dist("latency.ready_delay", lat.get("ready_delay", "0s"), True)


# --- The prefix cache (docs/cache.md, the `anthropic` policy) --------------------------------


class Entry:
    __slots__ = ("ready_at", "last_use")

    def __init__(self, ready_at, last_use):
        self.ready_at, self.last_use = ready_at, last_use


class Cache:
    """Entries keyed by a prefix's identity. An entry is pending from its writer's send until
    its writer's first token (then ready), and alive on [last_use, last_use + ttl)."""

    def __init__(self, ttl, min_tokens):
        self.ttl, self.min_tokens = ttl, min_tokens
        self.entries = {}

    def alive(self, e, now):
        return now < e.last_use + self.ttl

    def serve(self, keys, cum, breakpoints, now):
        """Look up and bill a request of block identities `keys` (the prefix key at each
        position), cumulative tokens `cum`, breakpoints at positions `breakpoints`. Returns
        (read, write, uncached, pending writes) and the positions to write once the TTFT is
        known (`commit`)."""
        hit = -1
        for bp in breakpoints:
            for pos in range(bp, max(bp - LOOKBACK, -1), -1):
                e = self.entries.get(keys[pos])
                if e is not None and e.ready_at <= now and self.alive(e, now):
                    hit = max(hit, pos)
                    break
        read = cum[hit] if hit >= 0 and cum[hit] >= self.min_tokens else 0
        if read == 0:
            hit = -1
        for bp in breakpoints:  # a hit refreshes its entry and the ready ones under it
            if bp <= hit:
                e = self.entries.get(keys[bp])
                if e is not None and e.ready_at <= now and self.alive(e, now):
                    e.last_use = now
        if hit >= 0:
            self.entries[keys[hit]].last_use = now
        writes = [bp for bp in breakpoints if bp > hit and cum[bp] >= self.min_tokens]
        write = cum[writes[-1]] - read if writes else 0
        redundant = 0
        for bp in writes:
            e = self.entries.get(keys[bp])
            if e is not None and self.alive(e, now) and e.ready_at > now:
                redundant += 1
        return read, write, cum[-1] - read - write, redundant, writes

    def commit(self, keys, writes, now, ready_at):
        for bp in writes:
            e = self.entries.get(keys[bp])
            if e is not None and self.alive(e, now) and e.ready_at > now:
                e.last_use = now  # a redundant write keeps the first writer's ready time
            else:
                self.entries[keys[bp]] = Entry(ready_at, now)


# --- The prompt: block identities as a chain --------------------------------------------------


class Chain:
    """A prompt as the identities of its prefixes: appending a block extends the chain."""

    interned = {}

    def __init__(self):
        self.keys, self.cum = [], []

    def push(self, block, tokens):
        if tokens <= 0:
            return  # an empty block is not sent (docs/model.md)
        prev = self.keys[-1] if self.keys else 0
        key = Chain.interned.setdefault((prev, block), len(Chain.interned) + 1)
        self.keys.append(key)
        self.cum.append((self.cum[-1] if self.cum else 0) + tokens)

    def copy(self):
        c = Chain()
        c.keys, c.cum = list(self.keys), list(self.cum)
        return c


def shared_prefix(cfg):
    """Tools, system, the parent's history (one block), the brief every sibling repeats."""
    c = Chain()
    tools = int(cfg.parent_tokens * TOOLS_SHARE)
    system = int(cfg.parent_tokens * SYSTEM_SHARE)
    c.push("tools", tools)
    c.push("system", system)
    c.push("history", cfg.parent_tokens - tools - system)
    c.push("brief", cfg.brief_tokens)
    return c


# --- One replication of one strategy ---------------------------------------------------------


class Run:
    """One replication: a SimPy environment, the cache, the metrics."""

    def __init__(self, cfg, rep, kind, param, prefix):
        self.cfg, self.rep, self.kind, self.param = cfg, rep, kind, param
        self.env = simpy.Environment()
        self.cache = Cache(cfg.ttl, cfg.min_tokens)
        self.slots = simpy.Resource(self.env, capacity=cfg.concurrency)
        self.prefix = prefix
        self.first_token = self.env.event()  # agent 0's first response begins
        self.first_done = [self.env.event() for _ in range(cfg.agents)]
        self.m = dict(cost=0.0, read=0, write=0, uncached=0, output=0, requests=0,
                      redundant=0, makespan=0.0)

    def streams(self, agent):
        """Common random numbers: every strategy of a replication sees the same draws."""
        base = f"{self.cfg.seed}/{self.rep}/{agent}"
        return random.Random(base + "/workload"), random.Random(base + "/latency")

    def gate(self, agent, launched):
        """The launch strategy's hold on an agent's first request (docs/model.md)."""
        env = self.env
        if self.kind == "wait_first" and agent > 0 and self.param > 0:
            cap = max(0.0, launched + self.param - env.now)
            yield self.first_token | env.timeout(cap)
        elif self.kind == "sequential" and agent > 0:
            yield self.first_done[agent - 1]
        elif self.kind == "stagger":
            yield env.timeout(max(0.0, agent * self.param - env.now))

    def request(self, chain, breakpoints, output, lat):
        """Send, serve and time one request; returns its TTFT and its duration."""
        cfg, now = self.cfg, self.env.now
        read, write, uncached, redundant, writes = self.cache.serve(
            chain.keys, chain.cum, breakpoints, now)
        overhead, prefill = cfg.overhead(lat), cfg.prefill_rate(lat)
        cached, decode = cfg.cached_rate(lat), cfg.decode_rate(lat)
        ttft = overhead + (uncached + write) / prefill + read / cached
        self.cache.commit(chain.keys, writes, now, now + ttft + cfg.ready_delay(lat))
        m = self.m
        m["read"] += read
        m["write"] += write
        m["uncached"] += uncached
        m["output"] += output
        m["requests"] += 1
        m["redundant"] += redundant
        m["cost"] += (cfg.input_usd * (uncached + WRITE_5M * write + cfg.read_mult * read)
                      + cfg.output_usd * output) / 1e6
        return ttft, output / decode

    def agent(self, i, launched):
        cfg, env = self.cfg, self.env
        wl, lat = self.streams(i)
        with self.slots.request() as slot:
            yield slot
            yield from self.gate(i, launched)
            chain = self.prefix.copy()
            system_end, shared_end = 1, len(chain.keys) - 1
            chain.push(("task", i), cfg.task_tokens)
            turns = cfg.turns(wl)
            output = cfg.output(wl)
            for k in range(turns):
                bps = sorted({system_end, shared_end, len(chain.keys) - 1})
                ttft, decode = self.request(chain, bps, output, lat)
                yield env.timeout(ttft)
                if k == 0 and i == 0 and not self.first_token.triggered:
                    self.first_token.succeed()
                yield env.timeout(decode)
                if k == 0:
                    self.first_done[i].succeed()
                if k + 1 == turns:
                    break
                yield env.timeout(cfg.tool_latency(wl))
                result = cfg.tool_result(wl)
                # The response (text, tool_use: its tokens divided evenly), then the result.
                chain.push(("text", i, k), output - output // 2)
                chain.push(("tool_use", i, k), output // 2)
                chain.push(("tool_result", i, k), result)
                output = cfg.output(wl)
        self.m["makespan"] = max(self.m["makespan"], env.now)

    def run(self):
        for i in range(self.cfg.agents):
            self.env.process(self.agent(i, 0.0))
        self.env.run()
        return self.m


# --- Replications and output ----------------------------------------------------------------

METRICS = ["cost", "makespan", "read", "write", "uncached", "output", "requests", "redundant"]


def simulate(cfg):
    """Means and standard deviations over replications, per strategy; and the request count."""
    prefix = shared_prefix(cfg)
    results, total_requests = [], 0
    for label, (kind, param) in cfg.strategies:
        runs = [Run(cfg, r, kind, param, prefix).run() for r in range(cfg.replications)]
        total_requests += sum(m["requests"] for m in runs)
        stats = {}
        for name in METRICS:
            xs = [m[name] for m in runs]
            mean = sum(xs) / len(xs)
            var = sum((x - mean) ** 2 for x in xs) / max(1, len(xs) - 1)
            stats[name] = {"mean": mean, "sd": math.sqrt(var)}
        results.append({"strategy": label, **stats})
    return results, total_requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("--replications", type=int, help="override the file's replications")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    try:
        with open(args.experiment, "rb") as f:
            cfg = Config(tomllib.load(f), args.replications)
    except (OSError, tomllib.TOMLDecodeError, BadInput) as e:
        print(f"fanout.py: {args.experiment}: {e}", file=sys.stderr)
        sys.exit(2)
    start = time.perf_counter()
    results, requests = simulate(cfg)
    elapsed = time.perf_counter() - start
    if args.json:
        doc = {"replications": cfg.replications, "simpy": simpy.__version__,
               "requests": requests, "simulate_s": elapsed, "results": results}
        print(json.dumps(doc, indent=2))
        return
    print(f"{'strategy':<26}{'cost $':>10}{'makespan s':>12}{'cache read':>14}{'write':>12}")
    for r in results:
        print(f"{r['strategy']:<26}{r['cost']['mean']:>10.4f}{r['makespan']['mean']:>12.2f}"
              f"{r['read']['mean']:>14.1f}{r['write']['mean']:>12.1f}")
    print(f"{requests} requests in {elapsed:.2f} s: {requests / elapsed:,.0f} requests/s")


if __name__ == "__main__":
    main()
