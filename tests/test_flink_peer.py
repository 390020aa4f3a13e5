"""WQL's windows against Apache Flink's, and the peers benchmark's ground (benchmarks/peers.py).

The deep test draws random streams (keys, disorder, ties, pauses that cut sessions, readings on window
boundaries) and random TUMBLE, HOP (sizes a whole number of slides and not), CUMULATE and SESSION
windows, runs them all through Flink SQL in batch and streaming mode in one Flink process (Flink's own
virtual environment, benchmarks/peer_flink.py) and through WQL, and wants the same windows with the same
count, sum and max wherever Flink ran the window. It runs in `make test-deep`, and is skipped where
.venv-flink is absent (`make peers` builds it). The rest is fast: WQL never imports Flink, the benchmark's
rows are what its docstring says, and each of its windows compiles in WQL.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT

FLINK_PYTHON = ROOT / ".venv-flink" / "bin" / "python"
BASE_MS = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC
DATASETS = 8  # random streams, each with one window of every kind, in the one Flink run


def load(name: str) -> ModuleType:
    """A benchmark script as a module, registered under its own name: benchmarks/peers.py imports
    peer_cases by that name, and a dataclass needs its module in sys.modules."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


cases = load("peer_cases")


def test_wql_never_imports_flink_nor_depends_on_it() -> None:
    """Flink is a peer for the benchmarks and the deep test only: no module of WQL imports it and no
    dependency of the package, extras included, names it."""
    found = []
    for path in (ROOT / "wql").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "pyflink"]
    assert found == []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]
    assert not [r for r in requirements if "flink" in r.lower()]


def test_the_benchmark_rows_lag_at_most_three_seconds_and_pause(tmp_path: Path) -> None:
    peers = load("peers")
    peers.write_rows(tmp_path / "rows", 20_000, 3)
    files = sorted((tmp_path / "rows").glob("*.csv"))
    assert len(files) == 3 and [f.stat().st_mtime for f in files] == sorted(f.stat().st_mtime for f in files)
    lines = [line.split(",") for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 20_000 and {int(k) for k, _, _ in lines} == set(range(peers.KEYS))
    stamps = [cases.millis_of(_parsed(ts)) for _, _, ts in lines]
    highest, lag = stamps[0], 0
    for stamp in stamps:
        highest = max(highest, stamp)
        lag = max(lag, highest - stamp)
    assert 2_500 < lag <= peers.DISORDER_MS < peers.WATERMARK_S * 1000
    of_key = sorted(s for (k, _, _), s in zip(lines, stamps, strict=True) if k == "0")
    steps = [b - a for a, b in itertools.pairwise(of_key)]
    assert max(steps) > 60_000 - peers.DISORDER_MS > 30_000 and min(steps) >= 10_000 - peers.DISORDER_MS


def _parsed(text: str) -> Any:
    import datetime

    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")


def test_every_benchmark_window_compiles_in_wql_with_the_grid_flink_uses() -> None:
    import wql

    for case in cases.BENCH_CASES:  # on a stream too (its slack): the benchmark runs both
        assert wql.compile(cases.wql_query(case, "readings", "/nowhere", 5), stream=True).plan
    unaligned = cases.Case("hop", 90, 40)
    assert "ALIGN START 0 SECONDS" in cases.wql_window(unaligned)
    assert "ALIGN" not in cases.wql_window(cases.Case("hop", 300, 60))


def test_flink_intervals_fit_its_two_digit_fields() -> None:
    assert cases.interval(3600) == "INTERVAL '1' HOUR"
    assert cases.interval(300) == "INTERVAL '5' MINUTE"
    assert cases.interval(90) == "INTERVAL '90' SECOND"
    assert cases.interval(150) == "INTERVAL '0:02:30' HOUR TO SECOND"
    assert cases.interval(100 * 3600) == "INTERVAL '100:00:00' HOUR TO SECOND"


# --- the deep test: random streams and windows, Flink against WQL --------------------------------------


@st.composite
def dataset(draw: Any) -> dict[str, Any]:
    """A random stream and one window of each kind. Each key's readings step by 0 (ties), by a little, by
    exactly the session gap (which keeps a session in both engines), or by a pause beyond it; some readings
    fall on whole seconds, so on window boundaries. Rows arrive up to `disorder` ms out of order."""
    rng = draw(st.randoms(use_true_random=False))
    gap = draw(st.integers(1, 20))
    slide = draw(st.integers(2, 20))
    size = draw(st.integers(1, 4 * slide).filter(lambda s, slide=slide: s % slide != 0))
    step = draw(st.integers(1, 20))
    windows = [
        cases.Case("tumble", draw(st.integers(1, 60))),
        cases.Case("hop", slide * draw(st.integers(2, 5)), slide),
        cases.Case("hop", size, slide),
        cases.Case("cumulate", step * draw(st.integers(2, 6)), step),
        cases.Case("session", gap),
    ]
    disorder = draw(st.sampled_from([0, 500, 2_000, 4_999]))
    rows = []
    for key in range(draw(st.integers(1, 4))):
        now = BASE_MS + rng.randrange(0, 120_000)
        for _ in range(draw(st.integers(1, 40))):
            rows.append((key, float(rng.randrange(0, 100)), now))
            kind = rng.randrange(5)
            now += (0, rng.randrange(1, gap * 1000), gap * 1000, gap * 1000 + rng.randrange(1, 60_000), 0)[kind]
            if kind == 4 or rng.random() < 0.2:  # onto a whole second: a boundary of every grid here
                now = -(-now // 1000) * 1000
    arrival = sorted(rows, key=lambda row: row[2] + rng.randrange(0, disorder + 1))
    return {"rows": arrival, "windows": windows, "watermark": disorder // 1000 + 1}


def written(streams: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """Each stream as a csv file in a directory of its own, and the spec peer_flink.py --check reads."""
    tables, queries = [], []
    for number, stream in enumerate(streams):
        path = folder / f"d{number}"
        path.mkdir()
        (path / "rows.csv").write_text("".join(cases.csv_line(*row) for row in stream["rows"]), encoding="utf-8")
        tables.append({"name": f"d{number}", "path": str(path), "watermark": stream["watermark"]})
        for index, case in enumerate(stream["windows"]):
            queries.append(
                {
                    "id": number * 10 + index,
                    "table": f"d{number}",
                    "kind": case.kind,
                    "size": case.size,
                    "slide": case.slide,
                }
            )
    return {"modes": ["batch", "streaming"], "tables": tables, "queries": queries}


def flink_results(
    spec: dict[str, Any], folder: Path
) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], list[tuple]]]:
    """Every window of the spec through Flink, one process: (form by mode and query, rows by mode and query)."""
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    out = folder / "flink.jsonl"
    command = [
        str(FLINK_PYTHON),
        str(ROOT / "benchmarks" / "peer_flink.py"),
        "--check",
        str(folder / "spec.json"),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    forms, rows = {}, {}
    for line in out.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        where = (row["mode"], row["id"])
        if "form" in row:
            forms[where] = row["form"]
            rows.setdefault(where, [])
        else:
            rows[where].append((row["k"], row["start"], row["end"], row["n"], row["total"], row["top"]))
    return forms, rows


def wql_rows(spark: Any, case: Any, path: str) -> list[tuple]:
    import wql

    result = wql.compile(cases.wql_query(case, "s", path)).run(spark)
    return sorted(
        (r["k"], cases.millis_of(r["window_start"]), cases.millis_of(r["window_end"]), r["n"], r["total"], r["top"])
        for r in result.select("k", "window_start", "window_end", "n", "total", "top").collect()
    )


@pytest.mark.deep
@pytest.mark.timeout(1500)
@pytest.mark.skipif(
    not FLINK_PYTHON.exists(), reason="Flink's environment .venv-flink is absent (make peers builds it)"
)
@settings(
    max_examples=1,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example is a Flink run: no shrinking
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(fresh=st.integers(0, 1 << 30), streams=st.lists(dataset(), min_size=DATASETS, max_size=DATASETS))
def test_wql_windows_equal_flinks(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, fresh: int, streams: list[dict[str, Any]]
) -> None:
    assume(fresh != 0)  # not Hypothesis's simplest example (every stream one row, every window the least): a random one
    folder = tmp_path_factory.mktemp("flink-peer")
    spec = written(streams, folder)
    forms, flink = flink_results(spec, folder)
    refused = sorted(
        {
            (mode, q["kind"], form)
            for (mode, qid), form in forms.items()
            for q in spec["queries"]
            if q["id"] == qid and form != "tvf"
        }
    )
    # Flink 2.3 (the version `make peers` installs): batch mode has no session windows; streaming mode's
    # HOP function wants a size that is a whole number of slides, and its older group window runs the rest.
    assert refused == [("batch", "session", "refused"), ("streaming", "hop", "group window")]
    mismatches, compared = [], 0
    for query in spec["queries"]:
        case = cases.Case(query["kind"], query["size"], query["slide"])
        ours = wql_rows(spark, case, str(folder / query["table"]))
        for mode in spec["modes"]:
            if forms[(mode, query["id"])] == "refused":
                continue
            theirs = sorted(flink[(mode, query["id"])])
            compared += bool(theirs)
            if ours != theirs:
                only_ours, only_theirs = sorted(set(ours) - set(theirs))[:2], sorted(set(theirs) - set(ours))[:2]
                mismatches.append(
                    f"{case.name} on {query['table']} ({mode}): WQL {len(ours)} windows, Flink {len(theirs)}; "
                    f"first differing: WQL {only_ours} Flink {only_theirs}"
                )
    assert mismatches == [], f"{folder}:\n" + "\n".join(mismatches)
    assert compared == 2 * len(spec["queries"]) - DATASETS  # every window, in both modes but batch sessions
