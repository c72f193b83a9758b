"""The DataFrames and files of the Python package equal the command line's, value for value
and byte for byte: a run of the default experiment, a sweep, a tune, and their errors."""

import json

import pandas as pd
import pytest

import prefixsim
from conftest import run_cli


def read(path):
    return pd.read_csv(path)


def test_a_run_is_the_cli_run(cli, root, tmp_path):
    out = tmp_path / "cli"
    done = run_cli(cli, "run", "experiments/default.toml", "--out", out, "--jobs", "2")
    assert done.returncode == 0, done.stderr
    result = prefixsim.Experiment.from_toml(root / "experiments/default.toml").run(jobs=1)
    pd.testing.assert_frame_equal(result.summary, read(out / "summary.csv"), check_exact=True)
    pd.testing.assert_frame_equal(result.runs, read(out / "runs.csv"), check_exact=True)
    assert result.hold == json.loads((out / "hold.json").read_text())
    # The printed table is the command's, the hold answer's sentence under it.
    assert result.table in done.stdout
    mine = result.to_dir(tmp_path / "py")
    for name in ["summary.csv", "runs.csv", "hold.json", "manifest.json",
                 "histograms/latency.hlog"]:
        assert (mine / name).read_bytes() == (out / name).read_bytes(), name


def test_run_json_is_the_cli_json(cli, root):
    done = run_cli(cli, "run", "experiments/warm_vs_cold_parent.toml", "--json",
                   "--set", "replications=12", "--seed", "9")
    assert done.returncode == 0, done.stderr
    exp = prefixsim.Experiment.from_toml(root / "experiments/warm_vs_cold_parent.toml")
    assert exp.run(replications=12, seed=9).json == json.loads(done.stdout)


def test_a_sweep_is_the_cli_sweep(cli, root, tmp_path):
    out = tmp_path / "cli"
    done = run_cli(cli, "sweep", "experiments/hold_across_providers.toml", "--out", out,
                   "--set", "replications=6")
    assert done.returncode == 0, done.stderr
    exp = prefixsim.Experiment.from_toml(root / "experiments/hold_across_providers.toml")
    frame = prefixsim.sweep(exp.set("replications", 6), progress=False, jobs=2)
    pd.testing.assert_frame_equal(frame, read(out / "summary.csv"), check_exact=True)
    assert frame.attrs["content_hash"] == json.loads((out / "manifest.json").read_text())[
        "content_hash"]


def test_sweep_axes_are_a_sweep_table_in_their_order(cli, root, tmp_path):
    text = (root / "experiments/default.toml").read_text()
    file = tmp_path / "grid.toml"
    file.write_text(text + '\n[sweep]\n"workload.agents" = [2, 5]\nmax_wait = "1s..3s step 1s"\n')
    done = run_cli(cli, "sweep", file, "--out", tmp_path / "cli", "--set", "replications=5")
    assert done.returncode == 0, done.stderr
    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml").set("replications", 5)
    kept = tmp_path / "py"
    frame = prefixsim.sweep(exp, {"workload.agents": [2, 5], "max_wait": "1s..3s step 1s"},
                            out=kept, progress=False)
    pd.testing.assert_frame_equal(frame, read(tmp_path / "cli" / "summary.csv"), check_exact=True)
    assert list(frame["workload.agents"].unique()) == [2, 5], "the first axis varies slowest"
    assert frame.attrs["dir"] == str(kept) and (kept / "runs.csv").is_file()


def test_tune_is_the_cli_tune(cli, root):
    done = run_cli(cli, "tune", "experiments/default.toml", "--param", "max_wait", "--json",
                   "--set", "replications=20")
    assert done.returncode == 0, done.stderr
    exp = prefixsim.Experiment.from_toml(root / "experiments/default.toml")
    tuned = prefixsim.tune(exp.set("replications", 20), "max_wait", progress=False)
    assert tuned.json == json.loads(done.stdout)
    assert tuned.recommended == tuned.json["recommended"] and tuned.hold is not None
    assert len(tuned.candidates) == len(tuned.json["candidates"])


@pytest.mark.parametrize("key,value,arg", [
    ("workload.agents", "abc", "workload.agents=abc"),
    ("workload.agentz", 3, "workload.agentz=3"),
    ("cache.ttl", "-3s", "cache.ttl=-3s"),
    ("latency.draw", 99, "latency.draw=99"),
])
def test_errors_are_the_cli_errors(cli, root, key, value, arg, monkeypatch):
    done = run_cli(cli, "run", "experiments/default.toml", "--set", arg)
    assert done.returncode == 2
    monkeypatch.chdir(root)  # the file named as the command line names it
    exp = prefixsim.Experiment.from_toml("experiments/default.toml")
    with pytest.raises(prefixsim.InputError) as e:
        exp.set(key, value)
    # The command line names the --set it blames, then says what Python says.
    assert done.stderr.strip() == f"error: --set {arg}: {e.value}"
