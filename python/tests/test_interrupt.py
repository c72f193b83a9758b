"""Ctrl-C and the GIL: a sweep interrupted keeps its finished points and resumes to the numbers
of one run whole; other Python threads run while a simulation does; progress is reported."""

import re
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import pytest

import prefixsim
from conftest import run_cli

AXES = {"workload.agents": [2, 3, 4, 5, 6, 7]}
REPLICATIONS = 150

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import prefixsim

    exp = prefixsim.Experiment.from_toml(sys.argv[1]).set("replications", REPLICATIONS)

    def progress(done, total):
        if done == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, once the first point is in

    try:
        prefixsim.sweep(exp, AXES, out=sys.argv[2], jobs=1, progress=progress)
    except KeyboardInterrupt as e:
        print(e)
        sys.exit(3)
    print("complete")
    """
)


def test_ctrl_c_stops_a_sweep_and_resume_finishes_it(cli, root, tmp_path):
    out = tmp_path / "sweep"
    script = SCRIPT.replace("AXES", repr(AXES)).replace("REPLICATIONS", str(REPLICATIONS))
    proc = subprocess.run(
        [sys.executable, "-c", script, str(root / "experiments/default.toml"), str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "sweep interrupted:" in proc.stdout, proc.stdout
    kept = re.search(r"sweep interrupted: (\d+) of (\d+) points are in", proc.stdout)
    assert kept, proc.stdout
    assert 1 <= int(kept[1]) < int(kept[2]) == len(AXES["workload.agents"]), proc.stdout
    assert "resume=True" in proc.stdout
    assert not (out / "summary.csv").exists(), "an interrupted sweep writes no summary"

    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml")
    exp.set("replications", REPLICATIONS)
    resumed = prefixsim.sweep(exp, AXES, out=out, resume=True, progress=False)
    grid = tmp_path / "grid.toml"
    grid.write_text((root / "experiments/default.toml").read_text()
                    + f'\n[sweep]\n"workload.agents" = {AXES["workload.agents"]}\n')
    whole = tmp_path / "whole"
    done = run_cli(cli, "sweep", grid, "--out", whole, "--set", f"replications={REPLICATIONS}")
    assert done.returncode == 0, done.stderr
    pd.testing.assert_frame_equal(resumed, pd.read_csv(whole / "summary.csv"), check_exact=True)


def test_other_threads_run_while_a_simulation_does(root):
    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml")
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    try:
        before = ticks[0]
        start = time.monotonic()
        prefixsim.sweep(exp.set("replications", 100), {"workload.agents": [2, 4, 8]},
                        jobs=1, progress=False)
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        t.join()
    # Holding the GIL, the counter would not move until the sweep returned.
    assert elapsed > 0.3, "the sweep is long enough to tell"
    assert ticks[0] - before > 50


def test_progress_reaches_the_total(root):
    seen = []
    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml")
    prefixsim.sweep(exp.set("replications", 50), {"workload.agents": [2, 4, 6]},
                    progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (3, 3)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_an_error_in_the_progress_callback_stops_the_work_and_is_raised(root):
    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml")

    def boom(done, total):
        raise ValueError("my callback")

    with pytest.raises(ValueError, match="my callback"):
        prefixsim.sweep(exp.set("replications", 50), {"workload.agents": [2, 4, 6]},
                        progress=boom)
    with pytest.raises(ValueError, match="my callback"):
        exp.run(progress=boom)
