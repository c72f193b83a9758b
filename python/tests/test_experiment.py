"""Experiment: read from a file, a text or a dict, set as --set sets, copied, written back."""

from pathlib import Path

import pytest

import prefixsim

SMALL = """
replications = 3
strategies = ["eager", "wait_first(max_wait=2s)"]
[workload]
agents = 4
"""


def test_a_path_a_path_like_and_a_text(root, monkeypatch):
    monkeypatch.chdir(root)
    by_str = prefixsim.Experiment.from_toml("experiments/default.toml")
    by_path = prefixsim.Experiment.from_toml(Path("experiments/default.toml"))
    by_text = prefixsim.Experiment.from_toml(Path("experiments/default.toml").read_text())
    assert by_str.origin == by_path.origin == "experiments/default.toml"
    assert by_text.origin == "<experiment>"
    assert by_str.to_toml() == by_path.to_toml() == by_text.to_toml()
    assert prefixsim.Experiment.from_toml("").replications >= 1, "empty text: every default"
    with pytest.raises(prefixsim.InputError, match="no/such.toml"):
        prefixsim.Experiment.from_toml("no/such.toml")


def test_set_checks_as_the_command_line(root):
    exp = prefixsim.Experiment.from_toml(SMALL)
    assert exp.set("workload.agents", 10) is exp, "set chains"
    assert exp.to_dict()["workload"]["agents"] == 10
    exp.set("cache.ttl=1h").set("strategies", ["eager"])
    assert exp.to_dict()["cache"]["ttl"] == "1h" and exp.strategies == ["eager"]
    with pytest.raises(prefixsim.InputError, match="expected an integer >= 1"):
        exp.set("workload.agents", 0)
    with pytest.raises(prefixsim.InputError, match="did you mean `workload.agents`"):
        exp.set("workload.agnets", 3)
    with pytest.raises(prefixsim.InputError, match="not a value an experiment holds"):
        exp.set("workload.agents", object())
    assert exp.to_dict()["workload"]["agents"] == 10, "a refused set changes nothing"


def test_numpy_values_are_values(root):
    np = pytest.importorskip("numpy")
    exp = prefixsim.Experiment.from_toml(SMALL)
    exp.set("workload.agents", np.int64(6))
    exp.set("cache.miss_probability", np.float64(0.25))
    exp.set("workload.parent_warm", np.bool_(True))
    exp.set("strategies", np.array(["eager"]))
    assert exp.to_dict()["workload"]["agents"] == 6
    assert exp.to_dict()["workload"]["parent_warm"] is True
    assert exp.strategies == ["eager"]
    assert exp.to_dict()["cache"]["miss_probability"] == 0.25


def test_copy_is_independent():
    a = prefixsim.Experiment.from_toml(SMALL)
    b = a.copy().set("replications", 9)
    assert (a.replications, b.replications) == (3, 9)


def test_from_dict_keeps_the_sweep_order_and_to_toml_reads_back():
    d = {
        "replications": 2,
        "strategies": ["eager"],
        "workload": {"agents": 2, "turns": "const(1)"},
        "sweep": {"workload.agents": [1, 2], "cache.ttl": ["5m", "1h"]},
    }
    exp = prefixsim.Experiment.from_dict(d)
    assert exp.origin == "<dict>"
    text = exp.to_toml()
    assert text.index('"workload.agents"') < text.index('"cache.ttl"')
    again = prefixsim.Experiment.from_toml(text)
    grid = prefixsim.sweep(again, progress=False)
    assert list(grid["workload.agents"]) == [1, 1, 2, 2], "the first axis varies slowest"
    assert list(grid["cache.ttl"]) == ["5m", "1h", "5m", "1h"]
    with pytest.raises(prefixsim.InputError, match="unknown key `workload.agnets`"):
        prefixsim.Experiment.from_dict({"workload": {"agnets": 3}})
    with pytest.raises(prefixsim.InputError, match="sweep: expected a table"):
        prefixsim.Experiment.from_dict({"sweep": 3})


def test_the_default_experiment_is_the_binary_s():
    exp = prefixsim.Experiment.default()
    assert exp.name and len(exp.strategies) > 1 and "replications" in repr(exp)


def test_run_overrides_replications_and_seed_on_a_copy():
    exp = prefixsim.Experiment.from_toml(SMALL)
    a = exp.run(replications=5, seed=1, hold=False)
    b = exp.run(replications=5, seed=1, hold=False, jobs=1)
    assert exp.replications == 3, "the experiment is left as it was"
    assert list(a.runs.replication.unique()) == [0, 1, 2, 3, 4]
    assert a.summary.equals(b.summary), "jobs never changes a number"
    c = exp.run(replications=5, seed=2, hold=False)
    assert not a.summary.equals(c.summary), "the seed does"


def test_to_dir_refuses_a_directory_with_files(tmp_path):
    result = prefixsim.Experiment.from_toml(SMALL).run(hold=False)
    (tmp_path / "x").write_text("mine")
    with pytest.raises(prefixsim.InputError, match="not empty"):
        result.to_dir(tmp_path)
    assert (tmp_path / "x").read_text() == "mine"
    result.to_dir(tmp_path, force=True)
    assert (tmp_path / "summary.csv").is_file() and not (tmp_path / "x").exists()
