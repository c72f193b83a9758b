"""examples/python/hold_cap.py runs end to end and draws its figure."""

import subprocess
import sys

import pytest


def test_the_hold_cap_example_draws_a_png(root, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "hold_cap.png"
    done = subprocess.run(
        [sys.executable, str(root / "examples/python/hold_cap.py"), "--out", str(png),
         "--replications", "20"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000, "a figure, not an empty canvas"
