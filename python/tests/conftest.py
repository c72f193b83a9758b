"""Fixtures of the Python package's tests: the repository (its experiments and data) and the
`prefixsim` command line the DataFrames are compared with (PREFIXSIM_BIN, else the release
build under target/, built once if missing)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def cli() -> Path:
    given = os.environ.get("PREFIXSIM_BIN")
    if given:
        path = Path(given)
        assert path.is_file(), f"PREFIXSIM_BIN={given}: no such file"
        return path
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "release" / "prefixsim"
    if not path.is_file():
        subprocess.run(
            ["cargo", "build", "--release", "--bin", "prefixsim"], cwd=ROOT, check=True
        )
    return path


def run_cli(cli: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`prefixsim ARGS` in the repository, its output captured."""
    return subprocess.run([str(cli), *map(str, args)], cwd=cwd, capture_output=True, text=True)
