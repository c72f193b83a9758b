"""How long should the forks wait for the first one's prefix? Sweep the hold cap of
experiments/default.toml and plot the cost of a fan-out against the cap, with the cap the hold
answer recommends.

    pip install './python[plot]'
    python examples/python/hold_cap.py --out hold_cap.png
"""

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a file, no window
import matplotlib.pyplot as plt

import prefixsim

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="hold_cap.png", help="the PNG to write")
    ap.add_argument("--replications", type=int, default=None, help="default: the file's")
    ap.add_argument("--jobs", type=int, default=None, help="threads (never changes a number)")
    args = ap.parse_args()

    exp = prefixsim.Experiment.from_toml(ROOT / "experiments" / "default.toml")
    exp.set("strategies", ["eager", "wait_first(max_wait=5s)"])
    if args.replications:
        exp.set("replications", args.replications)
    grid = prefixsim.sweep(exp, {"max_wait": "0s..8s step 250ms"}, jobs=args.jobs,
                           progress=sys.stderr.isatty())
    held = grid[grid.strategy_family == "wait_first"]
    eager = grid[grid.strategy == "eager"].cost_usd_mean.iloc[0]
    answer = exp.run(jobs=args.jobs).hold  # the cap `prefixsim run` recommends

    fig, ax = plt.subplots(figsize=(7, 4))
    # Every cap sees the same random draws (common random numbers), so the differences between
    # caps are far more precise than each mean's own interval (cost_usd_ci95, about +-4% here).
    ax.plot(held.max_wait_s, held.cost_usd_mean, "o-", ms=3, label="wait_first (mean)")
    ax.axhline(eager, color="grey", ls="--", label=f"eager (${eager:.3f})")
    if answer is not None:
        lo, hi = answer["cap_range_s"]
        ax.axvspan(lo, hi, color="tab:green", alpha=0.15)
        ax.axvline(answer["cap_s"], color="tab:green",
                   label=f"hold answer {answer['cap_label']} ({lo:g}-{hi:g} s)")
    ax.set_xlabel("hold cap max_wait (s)")
    ax.set_ylabel("cost per fan-out (USD)")
    ax.set_title(f"{exp.name}: {exp.replications} replications per cap, the same draws")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
