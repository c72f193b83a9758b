"""A run's histograms: their percentiles are summary.csv's columns, their encoding is the one
histograms/latency.hlog holds, and the hdrh package reads it."""

import numpy as np
import pytest

import prefixsim
from conftest import run_cli


@pytest.fixture(scope="module")
def result(root):
    return prefixsim.Experiment.from_toml(root / "experiments/default.toml").run(replications=40)


def test_percentiles_are_the_summary_columns(result):
    summary = result.summary.set_index("strategy")
    for strategy in result.strategies:
        row = summary.loc[strategy]
        for metric in prefixsim.LATENCIES:
            h = result.histogram(strategy, metric)
            got = h.values_at([50, 90, 99, 99.9])
            want = [row[f"{metric}_pooled_{p}_s"] for p in ["p50", "p90", "p99", "p999"]]
            np.testing.assert_array_equal(got, want, err_msg=f"{strategy} {metric}")
            assert h.min == row[f"{metric}_min_s"] and h.max == row[f"{metric}_max_s"]
            assert h.percentile(0) == h.min and h.percentile(100) == h.max


def test_buckets_hold_every_sample(result):
    h = result.histogram("eager", "ttft")
    b = h.buckets()
    assert list(b.columns) == ["value_s", "count"]
    assert b["count"].sum() == h.count > 0
    assert b["value_s"].is_monotonic_increasing
    assert h.min <= h.mean <= h.max


def test_the_encoding_is_the_hlog_one_and_hdrh_reads_it(cli, root, tmp_path, result):
    hdrh = pytest.importorskip("hdrh.histogram")
    result.to_dir(tmp_path / "out")
    lines = (tmp_path / "out" / "histograms" / "latency.hlog").read_text().splitlines()
    payloads = {line.rsplit(",", 1)[1] for line in lines if line.startswith("Tag=")}
    for strategy in result.strategies:
        for metric in prefixsim.LATENCIES:
            h = result.histogram(strategy, metric)
            assert h.encode() in payloads, f"{strategy} {metric}"
    h = result.histogram("wait_first(max_wait=5s)", "launch_wait")
    theirs = h.to_hdrh()
    assert isinstance(theirs, hdrh.HdrHistogram)
    assert theirs.get_total_count() == h.count
    # hdrh reads microseconds; both take the upper edge of the bucket the percentile is in.
    assert theirs.get_value_at_percentile(50) / 1e6 == pytest.approx(h.percentile(50), rel=1e-3)


def test_bad_names_are_input_errors(result):
    with pytest.raises(prefixsim.InputError, match="no strategy `eagre`.*eager"):
        result.histogram("eagre", "ttft")
    with pytest.raises(prefixsim.InputError, match="no latency `tfft`.*ttft"):
        result.histogram("eager", "tfft")
    with pytest.raises(prefixsim.InputError, match="between 0 and 100"):
        result.histogram("eager", "ttft").percentile(101)
