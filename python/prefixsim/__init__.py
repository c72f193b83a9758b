"""prefixsim from Python: the simulator of prompt caching for fleets of LLM agents.

The numbers are the command line's: every call runs the same Rust code as ``prefixsim``, and
the DataFrames are the rows of the CSV files the command writes (``summary.csv``,
``runs.csv``), parsed as ``pandas.read_csv`` parses those files.

    >>> import prefixsim
    >>> result = prefixsim.Experiment.from_toml("experiments/default.toml").run()
    >>> result.summary[["strategy", "cost_usd_mean", "hit_rate_mean"]]

Bad input raises ``InputError`` with the message the command line prints (its exit 2);
an I/O failure or a bug raises ``PrefixsimError`` (its exit 1). Simulations run with the GIL
released; Ctrl-C stops them cleanly (a sweep keeps its finished points).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import _native
from ._native import InputError, PrefixsimError, __version__

__all__ = [
    "Experiment",
    "Result",
    "Histogram",
    "TuneResult",
    "ReplayResult",
    "Calibration",
    "InputError",
    "PrefixsimError",
    "LATENCIES",
    "sweep",
    "tune",
    "replay",
    "calibrate",
    "models",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The latencies a run records, each with a histogram: an agent's wait before its first
#: request, every request's time to first token, an agent's time from launch to its end.
LATENCIES: tuple = tuple(_native.LATENCY_NAMES)

_MISSING = object()


def _csv(text: str) -> pd.DataFrame:
    """A CSV file's text as ``pandas.read_csv`` reads the file."""
    return pd.read_csv(io.StringIO(text))


Progress = Union[bool, Callable[[int, int], None]]


class _Progress:
    """What a ``progress`` argument asks for: ``True``, a bar (tqdm's when it is installed,
    ``tqdm.auto``: a widget in a notebook; else a line on stderr rewritten in place);
    ``False``, nothing; a callable, ``progress(done, total)`` as tasks end."""

    def __init__(self, what: str, progress: Progress) -> None:
        self.what = what
        self.own = progress if callable(progress) else None
        self.enabled = bool(progress)
        self.bar: Any = None
        self.total = 0

    def __call__(self, done: int, total: int) -> None:
        if self.own is not None:
            self.own(done, total)
            return
        if self.bar is None or total != self.total:
            self.close()
            self.total = total
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self.bar = _Line(self.what, total)
            else:
                self.bar = tqdm(total=total, unit=self.what)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def callback(self) -> Optional[Callable[[int, int], None]]:
        return self if self.enabled else None


class _Line:
    """The fallback bar: ``12/40 points`` on stderr."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.n = what, total, 0

    def update(self, k: int) -> None:
        self.n += k
        sys.stderr.write(f"\r{self.n}/{self.total} {self.what}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


class Experiment:
    """An experiment (docs/experiments.md): a workload, a cache, a latency model and the
    launch strategies to compare, every key checked as the command line checks it."""

    def __init__(self, native: "_native.Experiment") -> None:
        self._native = native

    @classmethod
    def from_toml(cls, source: PathLike) -> "Experiment":
        """An experiment file, or its text: a ``str`` holding a newline, ``=`` or ``[`` (or
        nothing) is TOML text, any other ``str`` or path-like object a file's path."""
        if isinstance(source, os.PathLike):
            return cls.from_file(source)
        if not isinstance(source, str):
            raise TypeError(f"from_toml takes a path or TOML text, not {type(source).__name__}")
        stripped = source.strip()
        if not stripped or any(c in stripped for c in "\n=["):
            return cls(_native.Experiment.from_text(source))
        return cls.from_file(source)

    @classmethod
    def from_file(cls, path: PathLike) -> "Experiment":
        """An experiment file; errors name it."""
        return cls(_native.Experiment.from_file(os.fspath(path)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Experiment":
        """The file's tables and keys as a dict, e.g. ``{"replications": 4, "workload":
        {"agents": 8}}``; a ``"sweep"`` dict keeps its axes in the dict's order."""
        return cls(_native.Experiment.from_dict(dict(d)))

    @classmethod
    def default(cls) -> "Experiment":
        """The embedded default experiment (what ``prefixsim`` with no command runs)."""
        return cls(_native.Experiment.default_experiment())

    def set(self, key: str, value: Any = _MISSING) -> "Experiment":
        """Set a dotted key as ``--set`` does, with its checks and messages:
        ``set("workload.agents", 10)``, or the command line's form ``set("cache.ttl=1h")``.
        Changes this experiment and returns it, so calls chain."""
        if value is _MISSING:
            self._native.set_assignment(key)
        else:
            self._native.set(key, value)
        return self

    def copy(self) -> "Experiment":
        """An independent copy (``set`` on it leaves this one alone)."""
        return Experiment(self._native.__copy__())

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def seed(self) -> int:
        return self._native.seed

    @property
    def replications(self) -> int:
        return self._native.replications

    @property
    def strategies(self) -> list:
        """The strategies' labels, in the experiment's order."""
        return self._native.strategies

    @property
    def origin(self) -> str:
        """Where it came from: a path, ``<experiment>`` (text), ``<dict>`` or the default's."""
        return self._native.origin

    def to_toml(self) -> str:
        """The experiment's keys (after every ``set``) as TOML text."""
        return self._native.to_toml()

    def to_dict(self) -> dict:
        """The experiment's keys (after every ``set``) as a dict, the values as written."""
        return self._native.to_dict()

    def run(
        self,
        replications: Optional[int] = None,
        jobs: Optional[int] = None,
        *,
        seed: Optional[int] = None,
        hold: bool = True,
        force: bool = False,
        progress: Progress = False,
    ) -> "Result":
        """Every replication of every strategy, as ``prefixsim run`` runs them.

        ``replications`` and ``seed`` override the experiment's; ``jobs`` (threads, default all
        cores) never changes a number. ``hold``: also search the hold answer when the
        experiment asks for it (``[report] answer = "hold_cap"``), as ``run`` does. ``force``
        starts work above the limits (docs/limits.md). ``progress``: ``True`` draws a bar of
        replications, a callable is called as ``progress(done, total)``."""
        exp = self
        if replications is not None or seed is not None:
            exp = self.copy()
            if replications is not None:
                exp.set("replications", replications)
            if seed is not None:
                exp.set("seed", seed)
        bar = _Progress("replications", progress)
        try:
            native = exp._native.run(jobs=jobs, hold=hold, force=force, progress=bar.callback())
        finally:
            bar.close()
        return Result(native)

    def __repr__(self) -> str:
        return repr(self._native)


class Result:
    """A finished run: the files ``prefixsim run --out`` writes, as DataFrames and objects."""

    def __init__(self, native: "_native.RunResult") -> None:
        self._native = native
        self._summary: Optional[pd.DataFrame] = None
        self._runs: Optional[pd.DataFrame] = None

    @property
    def summary(self) -> pd.DataFrame:
        """summary.csv: one row per strategy; means, standard deviations and 95% CI
        half-widths over replications, pooled latency percentiles (docs/results.md)."""
        if self._summary is None:
            self._summary = _csv(self._native.summary_csv())
        return self._summary.copy()

    @property
    def runs(self) -> pd.DataFrame:
        """runs.csv: one row per replication and strategy."""
        if self._runs is None:
            self._runs = _csv(self._native.runs_csv())
        return self._runs.copy()

    @property
    def json(self) -> dict:
        """The ``prefixsim run --json`` document."""
        return json.loads(self._native.json())

    @property
    def table(self) -> str:
        """The table ``prefixsim run`` prints, with the hold answer under it."""
        return self._native.table()

    @property
    def hold(self) -> Optional[dict]:
        """hold.json: the hold cap to use, with its interval (None unless searched)."""
        text = self._native.hold_json()
        return None if text is None else json.loads(text)

    @property
    def strategies(self) -> list:
        return self._native.strategies()

    def histogram(self, strategy: str, metric: str) -> "Histogram":
        """One latency's histogram (``metric``: one of ``LATENCIES``) of ``strategy``, over
        every agent (or request) of every replication."""
        return Histogram(self._native.histogram(strategy, metric))

    def to_dir(self, path: PathLike, *, force: bool = False, trace: bool = False) -> Path:
        """Write the files ``prefixsim run --out PATH`` writes (``plot`` and ``report`` read
        them). PATH must be absent or empty unless ``force``, which replaces it atomically."""
        self._native.to_dir(os.fspath(path), force=force, trace=trace)
        return Path(path)

    def __repr__(self) -> str:
        return self.table

    def _repr_html_(self) -> str:
        return self.summary._repr_html_()


class Histogram:
    """One latency's histogram (HdrHistogram, buckets within 0.1%), read in seconds."""

    def __init__(self, native: "_native.Histogram") -> None:
        self._native = native

    @property
    def count(self) -> int:
        return self._native.count

    @property
    def min(self) -> float:
        """The exact least value, seconds."""
        return self._native.min

    @property
    def max(self) -> float:
        """The exact greatest value, seconds."""
        return self._native.max

    @property
    def mean(self) -> float:
        return self._native.mean

    def percentile(self, q: float) -> float:
        """The value at percentile ``q`` (0 to 100), seconds, as summary.csv computes it:
        ``percentile(99)`` is the ``*_pooled_p99_s`` column (the upper edge of the bucket
        the 99th percentile falls in, within the exact extremes); 0 is ``min``, 100 ``max``."""
        return self._native.percentile(float(q))

    def values_at(self, percentiles: Iterable[float]) -> np.ndarray:
        """``percentile`` of each of ``percentiles``, as an array."""
        return np.array([self.percentile(q) for q in percentiles], dtype=float)

    def buckets(self) -> pd.DataFrame:
        """The counted buckets: ``value_s`` (each bucket's upper edge) and ``count``."""
        values, counts = self._native.buckets()
        return pd.DataFrame({"value_s": np.array(values), "count": np.array(counts, dtype=np.int64)})

    def encode(self) -> str:
        """HdrHistogram's compressed V2 encoding, base64, in microseconds: the form of
        histograms/latency.hlog, read by Java's HdrHistogram and the ``hdrh`` package."""
        return self._native.encode()

    def to_hdrh(self) -> Any:
        """The histogram as the ``hdrh`` package's ``HdrHistogram`` (values in microseconds;
        ``pip install 'prefixsim[hdrh]'``)."""
        try:
            from hdrh.histogram import HdrHistogram
        except ImportError as e:
            raise ImportError("to_hdrh needs the hdrh package: pip install hdrhistogram") from e
        return HdrHistogram.decode(self.encode())

    def __repr__(self) -> str:
        return repr(self._native)


class TuneResult:
    """What ``tune`` found: tune.json as objects, and the table ``prefixsim tune`` prints."""

    def __init__(self, text: str, table: str) -> None:
        self.json: dict = json.loads(text)
        self.table: str = table

    @property
    def candidates(self) -> pd.DataFrame:
        """Every value tried: its objective (NaN where it breaks the bound), cost and tails."""
        return pd.DataFrame(self.json["candidates"])

    @property
    def recommended(self) -> Optional[float]:
        """The value to use (seconds for a duration), or None when none met the objective."""
        return self.json["recommended"]

    @property
    def recommended_label(self) -> Optional[str]:
        return self.json["recommended_label"]

    @property
    def hold(self) -> Optional[dict]:
        """Tuning the hold cap: the hold answer with its interval, as ``run`` gives it."""
        return self.json.get("hold")

    @property
    def notes(self) -> list:
        return self.json["notes"]

    def __repr__(self) -> str:
        return self.table


def _axes(axes: Optional[Mapping[str, Union[str, Sequence[Any]]]]) -> list:
    """``axes`` as (key, values) pairs in order: a list of values, or a range as a ``[sweep]``
    table writes it (``"0s..10s step 500ms"``, ``"1..64 x2"``)."""
    if axes is None:
        return []
    pairs = []
    for key, values in axes.items():
        if isinstance(values, str):
            pairs.append((key, values))
        elif isinstance(values, Iterable) and not isinstance(values, bytes):
            pairs.append((key, list(values)))
        else:
            raise InputError(f"axes[{key!r}]: a list of values or a range, not {values!r}")
    return pairs


def sweep(
    experiment: Experiment,
    axes: Optional[Mapping[str, Union[str, Sequence[Any]]]] = None,
    *,
    jobs: Optional[int] = None,
    progress: Progress = True,
    out: Optional[PathLike] = None,
    resume: bool = False,
    force: bool = False,
) -> pd.DataFrame:
    """Run a grid, as ``prefixsim sweep`` does, and return its summary.csv.

    ``axes`` maps dotted keys to their values (``{"workload.agents": [2, 8, 32]}``, or a range
    ``{"max_wait": "0s..10s step 500ms"}``; the first varies slowest); without it, the experiment's own ``[sweep]`` table. With ``out`` the
    result files stay there (``resume`` continues an interrupted sweep, ``force`` replaces the
    directory); without it they go to a temporary directory, removed after reading. The
    DataFrame's ``attrs`` hold ``dir`` (when kept), ``points`` and ``content_hash``.

    ``progress``: ``True`` draws a bar of points (tqdm's when installed), a callable is called
    as ``progress(done, total)``. Ctrl-C stops handing out points, lets the running ones
    finish into the journal, and raises ``KeyboardInterrupt`` saying how to resume (a
    temporary directory is kept then)."""
    keep = out is not None
    where = Path(out) if keep else Path(tempfile.mkdtemp(prefix="prefixsim-sweep-")) / "sweep"
    bar = _Progress("points", progress)
    try:
        done = _native.sweep(
            experiment._native,
            _axes(axes),
            os.fspath(where),
            jobs=jobs,
            resume=resume,
            force=force,
            progress=bar.callback(),
        )
    except KeyboardInterrupt:
        raise
    except BaseException:
        if not keep:
            shutil.rmtree(where.parent, ignore_errors=True)
        raise
    finally:
        bar.close()
    frame = pd.read_csv(where / "summary.csv")
    frame.attrs.update(points=done["points"], content_hash=done["content_hash"])
    if keep:
        frame.attrs["dir"] = str(where)
    else:
        shutil.rmtree(where.parent, ignore_errors=True)
    return frame


def tune(
    experiment: Experiment,
    param: str,
    range: Optional[str] = None,
    *,
    objective: str = "cost",
    lam: Optional[float] = None,
    strategy: Optional[str] = None,
    refine: int = 2,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    force: bool = False,
    progress: Progress = True,
) -> TuneResult:
    """The value of ``param`` that minimises ``objective``, as ``prefixsim tune`` finds it:
    ``tune(exp, "max_wait")`` is the hold cap (with its interval), ``tune(exp,
    "workload.concurrency", "1..64 x2", objective="cost+0.002*p95_makespan")`` any other
    numeric key. With ``out``, tune.json is written there too."""
    bar = _Progress("candidates", progress)
    try:
        text, table = _native.tune(
            experiment._native,
            param,
            range,
            objective=objective,
            lam=lam,
            strategy=strategy,
            refine=refine,
            jobs=jobs,
            out=None if out is None else os.fspath(out),
            force=force,
            progress=bar.callback(),
        )
    finally:
        bar.close()
    return TuneResult(text, table)



class ReplayResult:
    """A trace replayed through the cache: the ``prefixsim replay --json`` document as objects,
    and the table ``replay`` prints."""

    def __init__(self, text: str, table: str, warned: list) -> None:
        doc = json.loads(text)
        #: One dict per cache choice compared (one without ``what_if``).
        self.json: list = doc if isinstance(doc, list) else [doc]
        self.table: str = table
        #: What ``replay`` prints as warnings (skipped lines, no block reused).
        self.warnings: list = warned

    @property
    def choices(self) -> pd.DataFrame:
        """One row per cache choice: cost, hit rate, tokens by billing, misses by cause
        (nested fields flattened with ``.``: ``miss_share.expired``, ``reuse_gap.p50_s``)."""
        rows = [{k: v for k, v in c.items() if k != "conversations"} for c in self.json]
        return pd.json_normalize(rows)

    def __repr__(self) -> str:
        return self.table


def _choices(what_if: Union[None, str, Mapping[str, Any], Sequence[Any]]) -> list:
    """``what_if`` as ``--what-if`` choices: ``"cache.ttl=1h"``, a dict of one choice's keys,
    or a list of either; ``[]`` (or ``""``) compares the TTL ladder alone."""
    if what_if is None:
        return []
    if isinstance(what_if, (str, Mapping)):
        what_if = [what_if]
    out = []
    for c in what_if:
        if isinstance(c, Mapping):
            c = ",".join(f"{k}={v}" for k, v in c.items())
        out.append(str(c))
    return out or [""]


def replay(
    trace: PathLike,
    what_if: Union[None, str, Mapping[str, Any], Sequence[Any]] = None,
    *,
    format: Optional[str] = None,
    set: Union[None, Mapping[str, Any], Sequence[str]] = None,
    lenient: bool = False,
    instant_ready: bool = False,
    out: Optional[PathLike] = None,
    force: bool = False,
) -> ReplayResult:
    """Run a real request log through the cache, as ``prefixsim replay`` does
    (docs/replay.md). ``what_if``: cache choices to compare beside TTL 5m, 1h and none
    (``"cache.ttl=1h"``, ``{"cache.ttl": "1h", "capacity_tokens": 1e9}``, a list; ``[]`` the
    ladder alone); ``set``: replay keys (``{"block_size": 16}``); ``format``: mooncake,
    claude-code, requests, usage-log or otlp (default: guessed). With ``out``, replay.json is
    written there. The warnings the command prints are issued as Python warnings too."""
    sets = [f"{k}={v}" for k, v in set.items()] if isinstance(set, Mapping) else list(set or [])
    text, table, warned = _native.replay(
        os.fspath(trace),
        what_if=_choices(what_if),
        format=format,
        sets=sets,
        lenient=lenient,
        instant_ready=instant_ready,
        out=None if out is None else os.fspath(out),
        force=force,
    )
    for w in warned:
        warnings.warn(w, stacklevel=2)
    return ReplayResult(text, table, warned)


class Calibration:
    """A latency fit per model, as ``prefixsim calibrate`` makes it: the ``--json`` document
    as objects, the text it prints, and latency.toml (which ``[latency] file`` reads)."""

    def __init__(self, text: str, report: str, latency_toml: str, notes: list,
                 warned: list) -> None:
        self.json: dict = json.loads(text)
        self.text: str = report
        self.latency_toml: str = latency_toml
        self.notes: list = notes
        self.warnings: list = warned

    @property
    def fits(self) -> pd.DataFrame:
        """One row per model: the fitted overhead and rates with their intervals, the error
        on held-out sessions (nested fields flattened with ``.``)."""
        rows = [{k: v for k, v in m.items() if k != "validation"} for m in self.json["models"]]
        return pd.json_normalize(rows)

    @property
    def validation(self) -> pd.DataFrame:
        """The backtest on the ``validate`` files, one row per model (empty without them):
        requests, median abs error, share of requests above each predicted percentile."""
        rows = [dict(model=m["model"], **m["validation"]) for m in self.json["models"]
                if m.get("validation")]
        return pd.json_normalize(rows)

    def __repr__(self) -> str:
        return self.text


def calibrate(
    paths: Union[PathLike, Sequence[PathLike]],
    validate: Union[None, PathLike, Sequence[PathLike]] = None,
    *,
    format: Optional[str] = None,
    validate_format: Optional[str] = None,
    ttl: str = "5m",
    out: Optional[PathLike] = None,
    force: bool = False,
) -> Calibration:
    """Fit the latency model per model to measured requests, as ``prefixsim calibrate`` does
    (docs/calibrate.md): claude-code traces, usage logs (Anthropic, OpenAI, Gemini) or OTLP
    spans; ``validate``: files to backtest the fit on. With ``out``, its files (latency.toml,
    calibration.json, the figures) are written there."""
    def paths_of(p: Union[None, PathLike, Sequence[PathLike]]) -> list:
        if p is None:
            return []
        if isinstance(p, (str, os.PathLike)):
            return [os.fspath(p)]
        return [os.fspath(x) for x in p]

    found = _native.calibrate(
        paths_of(paths),
        validate=paths_of(validate),
        format=format,
        validate_format=validate_format,
        ttl=ttl,
        out=None if out is None else os.fspath(out),
        force=force,
    )
    for w in found[4]:
        warnings.warn(w, stacklevel=2)
    return Calibration(*found)


def models(models_file: Optional[PathLike] = None) -> pd.DataFrame:
    """The models an experiment can name, as ``prefixsim models --json`` lists them: prices
    (USD per million tokens), windows, cache rules and latency fits, with the page and day
    each was checked; the models ``models_file`` defines after the presets."""
    text = _native.models(None if models_file is None else os.fspath(models_file))
    return pd.json_normalize(json.loads(text)["models"])
