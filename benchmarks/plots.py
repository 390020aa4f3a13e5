"""Draw docs/performance.md's charts from the benchmarks' saved JSON lines (benchmarks/record.py writes them).

    python benchmarks/plots.py [--results benchmarks/results.jsonl] [--out docs/images]

Nothing is run: the charts are redrawn from the file, so they change only when the measurements do.
One PNG per benchmark, each named after it; a benchmark with no lines in the file is skipped:

- sliding.png:        seconds against RANGE/SLIDE, batch (WQL, window(), tumbling) and stream (WQL's
                      streaming job, streaming window(), WQL's batch run over the same files);
- slide_by_tuple.png: a window at every tuple: WQL, the OVER frame, tumbling, for sum and for max;
- sessions.png:       sessions and frames: WQL, Spark's session_window (sessions only), tumbling;
- intervals.png:      interval events: seconds against mean event length, WQL, bucket, explode;
- stream_state.png:   a stream's median trigger against the keys kept, WQL's two state engines and
                      Spark's streaming window(), with Spark's RocksDB and in-memory state store providers;
- peers.png:          Flink's window functions on one csv: WQL, Spark's own and Flink SQL in batch and
                      streaming mode; and the same rows as a stream, with each engine's scan alone.

Needs matplotlib (`pip install -e '.[bench]'`; `make bench-plots` installs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.jsonl"
OUT = HERE.parent / "docs" / "images"

WQL, NATIVE, TUMBLING, OTHER = "#1f77b4", "#d62728", "#7f7f7f", "#2ca02c"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def of(rows: Iterable[dict[str, Any]], benchmark: str) -> list[dict[str, Any]]:
    return [row for row in rows if row.get("benchmark") == benchmark]


def loads(rows: list[dict[str, Any]]) -> str:
    values = [row["load"] for row in rows if "load" in row]
    if not values:
        return ""
    low, high = min(values), max(values)
    return f"load average {low:.1f}" if low == high else f"load average {low:.1f}–{high:.1f}"


def figure(columns: int = 1) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False})
    return plt.subplots(1, columns, figsize=(6.2 * columns, 4.2), squeeze=False)


def save(fig: Any, path: Path, note: str) -> None:
    fig.text(0.01, 0.01, note, fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: a redraw of the same data is equal
    print(f"wrote {path}", file=sys.stderr)


def plain_log(axis: Any) -> None:
    """Log axes with plain numbers at 1, 2 and 5 of each power of ten (1, 2, 5, 10, 20, 50), not powers of ten;
    the other minor ticks unlabelled, so that no two labels print over each other however many decades the
    axis spans."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.yaxis.set_minor_formatter(NullFormatter())
    axis.xaxis.set_minor_formatter(NullFormatter())  # the x ticks are the measured points, labelled by the chart


def bars(axis: Any, groups: list[str], series: list[tuple[str, str, list[float | None]]]) -> None:
    """Grouped bars: one group per label, one bar per series (a missing value leaves a gap)."""
    width = 0.8 / len(series)
    for index, (label, color, values) in enumerate(series):
        xs = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        present = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if present:
            axis.bar([x for x, _ in present], [v for _, v in present], width, label=label, color=color)
            for x, v in present:
                axis.annotate(
                    f"{v:.2g}", (x, v), ha="center", va="bottom", fontsize=7, xytext=(0, 1), textcoords="offset points"
                )
    axis.set_xticks(range(len(groups)), groups)
    axis.set_ylabel("seconds (best run)")
    axis.legend(frameon=False, fontsize=8)


def sliding(rows: list[dict[str, Any]], out: Path) -> bool:
    batch = sorted((r for r in of(rows, "sliding") if "case" not in r), key=lambda r: r["ratio"])
    stream = sorted((r for r in of(rows, "streaming") if "case" not in r), key=lambda r: r["ratio"])
    if not batch and not stream:
        return False
    fig, axes = figure(2)
    for axis, data, title, curves in (
        (
            axes[0][0],
            batch,
            "batch: 5,000,000 rows, 100 keys, SLIDE 1 minute",
            (("wql_s", "WQL", WQL), ("native_s", "Spark window()", NATIVE), ("tumbling_s", "tumbling", TUMBLING)),
        ),
        (
            axes[0][1],
            stream,
            "stream: the same rows in 10 files, one a trigger",
            (
                ("wql_s", "WQL stream", WQL),
                ("native_s", "streaming window()", NATIVE),
                ("batch_s", "WQL batch", TUMBLING),
            ),
        ),
    ):
        if not data:
            axis.set_axis_off()
            continue
        for key, label, color in curves:
            points = [(r["ratio"], r[key]) for r in data if r.get(key) is not None]
            if points:
                axis.plot(*zip(*points, strict=True), marker="o", label=label, color=color)
        plain_log(axis)
        axis.set_xticks([r["ratio"] for r in data], [str(r["ratio"]) for r in data])
        axis.set_xlabel("RANGE / SLIDE")
        axis.set_ylabel("seconds (best run)")
        axis.set_title(title, fontsize=10)
        axis.legend(frameon=False, fontsize=8)
    save(fig, out / "sliding.png", f"local[*], 2 shared cores; {loads(batch + stream)}")
    return True


def slide_by_tuple(rows: list[dict[str, Any]], out: Path) -> bool:
    data = of(rows, "slide_by_tuple") + of(rows, "slide_by_tuple_max")
    if not data:
        return False
    fig, axes = figure()
    groups = [f"{'max' if 'max' in r['args'] else 'sum'} ({r['plan']})" for r in data]
    bars(
        axes[0][0],
        groups,
        [
            ("WQL", WQL, [r["wql_s"] for r in data]),
            ("OVER (… RANGE BETWEEN …)", NATIVE, [r["over_s"] for r in data]),
            ("tumbling", TUMBLING, [r["tumbling_s"] for r in data]),
        ],
    )
    axes[0][0].set_title("a window at every tuple: 2,000,000 rows, ~1,000 tuples a window", fontsize=10)
    save(fig, out / "slide_by_tuple.png", f"local[*], 2 shared cores; {loads(data)}")
    return True


def sessions(rows: list[dict[str, Any]], out: Path) -> bool:
    data = of(rows, "sessions")
    if not data:
        return False
    fig, axes = figure()
    bars(
        axes[0][0],
        [f"{r['case']} ({r['plan']})" for r in data],
        [
            ("WQL", WQL, [r["wql_s"] for r in data]),
            ("Spark session_window", NATIVE, [r.get("native_s") for r in data]),
            ("tumbling", TUMBLING, [r["tumbling_s"] for r in data]),
        ],
    )
    axes[0][0].set_title("sessions and frames: 5,000,000 rows, 100 keys", fontsize=10)
    save(fig, out / "sessions.png", f"local[*], 2 shared cores; {loads(data)}")
    return True


def intervals(rows: list[dict[str, Any]], out: Path) -> bool:
    data = of(rows, "intervals")
    if not data:
        return False
    aggregates = sorted({r["aggregate"] for r in data}, reverse=True)
    fig, axes = figure(len(aggregates))
    names = {"sum": "count, sum, avg", "max": "min, max"}
    for axis, aggregate in zip(axes[0], aggregates, strict=True):
        points = sorted((r for r in data if r["aggregate"] == aggregate), key=lambda r: r["length"])
        plan = points[0]["plan"] if points else ""
        for key, label, color in (
            ("wql_s", f"WQL ({plan})", WQL),
            ("bucket_s", "bucket (an event in every window)", OTHER),
            ("native_s", "Spark: explode the windows, group", NATIVE),
        ):
            axis.plot([r["length"] for r in points], [r[key] for r in points], marker="o", label=label, color=color)
        plain_log(axis)
        axis.set_xticks([r["length"] for r in points], [f"{r['length']:g}" for r in points])
        axis.set_xlabel("mean event length, in slides")
        axis.set_ylabel("seconds (best run)")
        axis.set_title(f"interval events, {names.get(aggregate, aggregate)}: 2,000,000 events", fontsize=10)
        axis.legend(frameon=False, fontsize=8)
    save(fig, out / "intervals.png", f"local[*], 2 shared cores; {loads(data)}")
    return True


def stream_state(rows: list[dict[str, Any]], out: Path) -> bool:
    """Per ratio, each engine's median trigger against the keys; RocksDB solid, in memory dashed."""
    data = of(rows, "stream_state") + of(rows, "stream_state_memory")
    if not data:
        return False
    ratios = sorted({r["ratio"] for r in data})
    fig, axes = figure(len(ratios))
    for axis, ratio in zip(axes[0], ratios, strict=True):
        points = sorted((r for r in data if r["ratio"] == ratio), key=lambda r: r["keys"])
        # Tumbling windows (ratio 1) take the bucket plan, whose state is in the checkpoint's own files.
        where = "bucket plan, state in its own files" if ratio == 1 else "pane plan, state in Spark's state store"
        for provider, style in (("rocksdb", "-"), ("memory", "--")):
            at = [r for r in points if r.get("provider", "rocksdb") == provider]
            name = "RocksDB" if provider == "rocksdb" else "in memory"
            for key, label, color in (
                ("wql_trigger_s", f"WQL ({where}), {name}", WQL),
                ("files_trigger_s", f"WQL, state in its own files, {name}", OTHER),
                ("native_trigger_s", f"Spark's streaming window(), {name}", NATIVE),
            ):
                shown = [r for r in at if r.get(key) is not None]
                if shown:
                    keys, seconds = [r["keys"] for r in shown], [r[key] for r in shown]
                    axis.plot(keys, seconds, style, marker="o", label=label, color=color)
        plain_log(axis)
        ticks = sorted({r["keys"] for r in points})
        axis.set_xticks(ticks, [f"{k:,}" for k in ticks])
        axis.set_xlabel("keys (the state grows with them; rows per trigger do not)")
        axis.set_ylabel("seconds, median trigger")
        rows_in = f"{points[0]['rows_per_trigger']:,}" if points else ""
        axis.set_title(f"a stream's trigger, RANGE/SLIDE = {ratio}: {rows_in} rows a trigger", fontsize=10)
        axis.legend(frameon=False, fontsize=8)
    save(fig, out / "stream_state.png", f"local[*], 2 shared cores; {loads(data)}")
    return True


def peers(rows: list[dict[str, Any]], out: Path) -> bool:
    data = of(rows, "peers")
    if not data:
        return False
    fig, axes = figure(2)
    fig.set_size_inches(15, 4.8)
    groups = [
        "scan only\n(WQL: its read)" if r["case"] == "scan" else r["case"].replace("(", "\n").rstrip(")") for r in data
    ]
    for axis, title, series in (
        (
            axes[0][0],
            f"batch: {data[0]['rows']:,} rows of csv, 100 keys",
            (
                ("wql", "WQL", WQL),
                ("native", "Spark's own", NATIVE),
                ("flink_batch", "Flink SQL, batch", OTHER),
                ("flink_streaming", "Flink SQL, streaming", "#9467bd"),
            ),
        ),
        (
            axes[0][1],
            f"stream: the same rows in {data[0]['files']} files, one a trigger (Flink: as one file, in order)",
            (
                ("wql_stream", "WQL stream", WQL),
                ("native_stream", "Spark streaming", NATIVE),
                ("flink_streaming", "Flink SQL, streaming", "#9467bd"),
            ),
        ),
    ):
        bars(axis, groups, [(label, color, [r.get(f"{key}_s") for r in data]) for key, label, color in series])
        refused_bars(axis, data, [key for key, _, _ in series])
        plain_log_y(axis)
        shown = [r[f"{key}_s"] for r in data for key, _, _ in series if r.get(f"{key}_s") is not None]
        axis.set_ylim(min(shown) / 2, max(shown) * 6)  # room for the smallest bar, and for the legend above
        axis.legend(frameon=False, fontsize=8, ncol=len(series), loc="upper center")
        axis.tick_params(axis="x", labelsize=7)
        axis.set_title(title, fontsize=10)
    save(fig, out / "peers.png", f"local[*] and Flink's local mini-cluster, 2 shared cores; {load_range(data)}")
    return True


def refused_bars(axis: Any, data: list[dict[str, Any]], engines: list[str]) -> None:
    """'refused' where an engine has no form of the window, at its bar's place."""
    width = 0.8 / len(engines)
    for group, row in enumerate(data):
        for index, engine in enumerate(engines):
            if row.get(f"{engine}_s") is None and engine in row.get("refused", {}):
                x = group + (index - (len(engines) - 1) / 2) * width
                axis.annotate(
                    "refused",
                    (x, 0),
                    xycoords=("data", "axes fraction"),
                    xytext=(0, 3),
                    textcoords="offset points",
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=6,
                )


def plain_log_y(axis: Any) -> None:
    """A log y axis labelled with plain numbers at 1, 2 and 5 of each power of ten, as plain_log's."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.yaxis.set_minor_formatter(NullFormatter())


def load_range(data: list[dict[str, Any]]) -> str:
    """The load average over a benchmark's own processes (load_low, load_high), as loads() says it."""
    low, high = min(r["load_low"] for r in data), max(r["load_high"] for r in data)
    return f"load average {low:.1f}" if low == high else f"load average {low:.1f}–{high:.1f}"


CHARTS = {
    "sliding": sliding,
    "slide_by_tuple": slide_by_tuple,
    "sessions": sessions,
    "intervals": intervals,
    "stream_state": stream_state,
    "peers": peers,
}

# --tables: each benchmark's lines as a markdown table for docs/performance.md: (title, benchmarks, columns).
TABLES = (
    (
        "sliding",
        ("sliding",),
        ("ratio", "case", "plan", "wql_s", "native_s", "tumbling_s", "native_over_wql", "wql_over_tumbling", "load"),
    ),
    (
        "streaming",
        ("streaming", "streaming_4_files"),
        (
            "files_per_trigger",
            "ratio",
            "case",
            "plan",
            "wql_s",
            "native_s",
            "batch_s",
            "floor_s",
            "empty_stream_s",
            "native_over_wql",
            "wql_over_batch",
            "state_rows",
            "load",
        ),
    ),
    (
        "stream state",
        ("stream_state", "stream_state_memory"),
        (
            "provider",
            "keys",
            "ratio",
            "windows_per_trigger",
            "wql_trigger_s",
            "files_trigger_s",
            "native_trigger_s",
            "native_over_wql",
            "wql_state_rows",
            "native_state_rows",
            "wql_jobs_per_trigger",
            "wql_s_per_million_units",
            "load",
        ),
    ),
    (
        "slide by tuple",
        ("slide_by_tuple", "slide_by_tuple_max"),
        (
            "args",
            "plan",
            "wql_s",
            "over_s",
            "tumbling_s",
            "over_over_wql",
            "wql_over_tumbling",
            "wql_over_tumbling_median",
            "load",
        ),
    ),
    (
        "sessions",
        ("sessions",),
        ("case", "plan", "wql_s", "native_s", "tumbling_s", "native_over_wql", "wql_over_tumbling", "load"),
    ),
    (
        "intervals",
        ("intervals",),
        (
            "length",
            "aggregate",
            "plan",
            "windows",
            "wql_s",
            "bucket_s",
            "native_s",
            "bucket_over_wql",
            "native_over_wql",
            "load",
        ),
    ),
    (
        "calendar",
        ("calendar",),
        ("case", "plan", "windows", "wql_s", "tumbling_s", "spark_s", "spark_over_wql", "wql_over_tumbling", "load"),
    ),
    (
        "peers",
        ("peers",),
        (
            "case",
            "plan",
            "wql_s",
            "native_s",
            "flink_batch_s",
            "flink_streaming_s",
            "native_over_wql",
            "flink_over_wql",
            "wql_stream_s",
            "native_stream_s",
            "flink_streaming_over_wql_stream",
            "flink_start_s",
            "load_low",
            "load_high",
        ),
    ),
)


def tables(rows: list[dict[str, Any]]) -> str:
    out = []
    for title, benchmarks, columns in TABLES:
        data = [r for name in benchmarks for r in of(rows, name)]
        if not data:
            continue
        out += [f"{title}:", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        out += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in data]
        out.append("")
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON lines (default %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNGs go (default %(default)s)")
    parser.add_argument("--tables", action="store_true", help="print markdown tables of the results instead")
    args = parser.parse_args()
    if not args.results.exists():
        parser.error(f"{args.results} does not exist: run benchmarks/record.py (make bench-plots) first")
    rows = lines(args.results)
    if args.tables:
        print(tables(rows))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    drawn = [name for name, chart in CHARTS.items() if chart(rows, args.out)]
    missing = sorted(set(CHARTS) - set(drawn))
    if missing:
        print(f"no results for {', '.join(missing)}: not drawn", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
