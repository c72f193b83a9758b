"""replay, calibrate and models: the command line's documents, as objects and DataFrames."""

import json

import pandas as pd
import pytest

import prefixsim
from conftest import run_cli

MOONCAKE = "data/mooncake/conversation_trace.jsonl"


def test_replay_is_the_cli_replay(cli, root, monkeypatch):
    done = run_cli(cli, "replay", "--what-if", MOONCAKE, "--json")
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(root)
    r = prefixsim.replay(MOONCAKE, what_if=[])
    assert r.json == json.loads(done.stdout)
    assert list(r.choices["label"]) == ["cache.ttl=5m", "cache.ttl=1h", "cache.ttl=none"]
    assert r.choices["miss_share.expired"].iloc[0] == r.json[0]["miss_share"]["expired"]
    table = run_cli(cli, "replay", "--what-if", MOONCAKE).stdout
    assert r.table == table


def test_replay_choices_and_settings(cli, root, monkeypatch, tmp_path):
    monkeypatch.chdir(root)
    args = ["replay", MOONCAKE, "--what-if=cache.ttl=1h,cache.capacity_tokens=20000000",
            "--set", "block_size=512", "--json", "--out", tmp_path / "cli"]
    done = run_cli(cli, *args)
    assert done.returncode == 0, done.stderr
    r = prefixsim.replay(MOONCAKE, {"cache.ttl": "1h", "cache.capacity_tokens": 20000000},
                         set={"block_size": 512}, out=tmp_path / "py")
    assert r.json == json.loads(done.stdout)
    assert (tmp_path / "py" / "replay.json").read_bytes() == (
        tmp_path / "cli" / "replay.json").read_bytes()
    with pytest.raises(prefixsim.InputError, match="block_size"):
        prefixsim.replay(MOONCAKE, set={"block_size": 0})


def test_calibrate_is_the_cli_calibrate(cli, root, monkeypatch, tmp_path):
    data = root / "data/claude-code-ttft"
    (tmp_path / "cli").mkdir()
    (tmp_path / "py").mkdir()
    # The same command in two places: latency.toml's header names the inputs and --out.
    done = run_cli(cli, "calibrate", data, "--json", "--out", "out", cwd=tmp_path / "cli")
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(tmp_path / "py")
    fit = prefixsim.calibrate(data, out="out")
    assert fit.json == json.loads(done.stdout)
    mine, theirs = tmp_path / "py" / "out", tmp_path / "cli" / "out"
    for name in ["latency.toml", "calibration.json", "ttft_fit.svg", "ttft_residuals.png"]:
        assert (mine / name).read_bytes() == (theirs / name).read_bytes(), name
    assert fit.latency_toml == (theirs / "latency.toml").read_text()
    assert set(fit.fits["model"]) == {m["model"] for m in fit.json["models"]}
    assert (fit.fits["overhead_s"] > 0).all()


def test_calibrate_validates_on_other_files(cli, root, monkeypatch):
    monkeypatch.chdir(root)
    done = run_cli(cli, "calibrate", "data/claude-code-ttft", "--validate",
                   "data/samples/usage-log.jsonl", "--json")
    assert done.returncode == 0, done.stderr
    fit = prefixsim.calibrate(["data/claude-code-ttft"], validate="data/samples/usage-log.jsonl")
    assert fit.json == json.loads(done.stdout)
    with pytest.raises(prefixsim.InputError, match="TTL must be positive"):
        prefixsim.calibrate("data/claude-code-ttft", ttl="0s")


def test_models_are_the_cli_models(cli, root, monkeypatch):
    done = run_cli(cli, "models", "--json", "--models", "data/samples/models.toml")
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(root)
    frame = prefixsim.models("data/samples/models.toml")
    want = pd.json_normalize(json.loads(done.stdout)["models"])
    pd.testing.assert_frame_equal(frame, want)
    assert "prices.input_usd_per_mtok" in frame.columns
    assert frame["defined_in"].notna().any(), "the file's models come after the presets"
