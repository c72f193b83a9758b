"""The README's Python lines: its install and test commands are the ones CI runs, and its
three-line default run runs and gives the numbers of `prefixsim run experiments/default.toml`."""

import re

import pandas as pd

from conftest import run_cli


def blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_three_lines_are_the_cli_run(cli, root, tmp_path, monkeypatch, capsys):
    readme = (root / "README.md").read_text()
    [code] = [b for b in blocks(readme, "python") if "import prefixsim" in b]
    assert len(code.strip().splitlines()) == 3
    monkeypatch.chdir(root)
    scope = {}
    exec(code, scope)
    assert "cost_usd_mean" in capsys.readouterr().out
    done = run_cli(cli, "run", "experiments/default.toml", "--out", tmp_path / "cli")
    assert done.returncode == 0, done.stderr
    want = pd.read_csv(tmp_path / "cli" / "summary.csv")
    pd.testing.assert_frame_equal(scope["result"].summary, want, check_exact=True)


def test_the_install_and_test_commands_are_ci_s(root):
    readme = (root / "README.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    shown = [b for b in blocks(readme, "sh") if "pip install" in b][0]
    for line in shown.splitlines():
        command = line.split("#")[0].strip()
        assert command and command in ci, f"README's `{command}` is not what .ci/run runs"
