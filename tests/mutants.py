"""Mutants `make test` must kill: small wrong edits at places where a bug once lived or easily could.

The suite's power is shown, not assumed: `make mutants` (or `python tests/mutants.py [NAME …]`) copies the
repository to a scratch directory for each mutant, makes the one edit there, and runs `make test` in it
(stopping at the first failure; the test file that should kill it runs first, so that a killed mutant costs
minutes, not a whole run). A mutant the suite does not kill is reported, and the command fails.

The scratch copy shares this checkout's virtualenv (a symlink) and keeps every file's modification time, so
`make` neither reinstalls nor rebuilds the JVM kernels unless the mutant is in their Java source; imports
resolve to the scratch copy through PYTHONPATH, in the test process and in every process it starts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str  # occurs exactly once in the file
    new: str
    why: str
    first: str  # the test file that kills it, run first (then the rest of the suite, as `make test` runs it)


MUTANTS = (
    Mutant(
        "slices-expire",
        "wql/runtime/jvm/wql/kernels/EventSlices.java",
        "if (event.last() >= from) {",
        "if (event.last() > from) {",
        "SE-slices: a long event expires one slice early",
        "tests/test_slices_kernel.py",
    ),
    Mutant(
        "slices-piece-flag",
        "wql/compiler/kernels/interval_windows.py",
        "on_past |= table.column(going_on).to_numpy(zero_copy_only=False).astype(bool)",
        "on_past |= False",
        "numpy SE-slices: a piece of a long event is written as if it ended at its last slice",
        "tests/test_interval_batches.py",
    ),
    Mutant(
        "state-part-swallowed",
        "wql/compiler/kernels/engine.py",
        'if "error" in outcome and not quiet:\n            raise outcome["error"]',
        'if "error" in outcome and not quiet:\n            pass',
        "a stream's failing state part lets the trigger commit",
        "tests/test_streaming_edges.py",
    ),
    Mutant(
        "late-at-the-punctuation",
        "wql/compiler/kernels/engine.py",
        "return F.coalesce(t < F.lit(before), F.lit(False))",
        "return F.coalesce(t <= F.lit(before), F.lit(False))",
        "a tuple exactly at the punctuation counts as late (on both engines: one rule)",
        "tests/test_streaming.py",
    ),
    Mutant(
        "drain-over-unfinished-trigger",
        "wql/compiler/kernels/stream_run.py",
        'if logged and (meta["batch"] is None or logged[-1] > meta["batch"]):',
        "if False:",
        "a drain runs over a trigger Spark logged and WQL never finished",
        "tests/test_stream_faults.py",
    ),
    Mutant(
        "kafka-missed-tick",
        "wql/compiler/codegen/tuples.py",
        'else f"F.least({high}, F.lit(punctuation) - RANGE - TICK)"',
        'else f"F.least({high}, F.lit(punctuation) - RANGE)"',
        "GENEROUS Kafka windows: a late row names a window it joined as missed",
        "tests/test_stream_faults.py",
    ),
    Mutant(
        "grid-final-edge",
        "wql/compiler/codegen/grid.py",
        'code(f"return {end} <= punctuation")',
        'code(f"return {end} < punctuation")',
        "a grid window is final one punctuation late",
        "tests/test_streaming.py",
    ),
    Mutant(
        "store-late-edge",
        "wql/runtime/jvm/wql/kernels/StreamCells.java",
        "if (point != Long.MIN_VALUE && t < point && !s.generous) {",
        "if (point != Long.MIN_VALUE && t <= point && !s.generous) {",
        "the state store engine turns a tuple exactly at the punctuation late",
        "tests/test_stream_store.py",
    ),
    Mutant(
        "support-closure",
        "wql/compiler/codegen/support.py",
        "pending.extend(n for n in known[name].reads if n in known and n not in own and n not in wanted)",
        "pending.extend(n for n in known[name].reads if n in known and n not in own and n in wanted)",
        "a job carries only the support functions its own code names, not what they call",
        "tests/test_codegen.py",
    ),
)


def scratch_copy(target: Path) -> None:
    """The checkout's files as they are now (tracked and new, not ignored), with their modification times."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    jar = ROOT / "wql" / "runtime" / "jvm" / "wql-kernels.jar"
    if jar.exists():
        shutil.copy2(jar, target / jar.relative_to(ROOT))
    (target / ".venv").symlink_to(ROOT / ".venv")


def apply(mutant: Mutant, target: Path) -> None:
    path = target / mutant.path
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.name}: the text to change occurs {text.count(mutant.old)} times in {mutant.path}")
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")


def run(mutant: Mutant, timeout: float) -> tuple[bool, float, str]:
    """Whether `make test` failed on the mutant (it must), how long it took, and its last lines."""
    with tempfile.TemporaryDirectory(prefix=f"wql-mutant-{mutant.name}-") as scratch:
        target = Path(scratch)
        scratch_copy(target)
        apply(mutant, target)
        env = {**os.environ, "PYTHONPATH": str(target), "WQL_TEST_FIRST": mutant.first}
        started = time.monotonic()
        try:
            done = subprocess.run(
                ["make", "test", "PYTEST_ARGS=-x -q -p no:cacheprovider"],
                cwd=target,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False, time.monotonic() - started, "timed out"
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        return done.returncode != 0, time.monotonic() - started, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (all by default)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per mutant")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    if args.list or not chosen:
        for m in MUTANTS:
            print(f"{m.name:32} {m.path}: {m.why}")
        return 0 if args.list else 2
    survivors = []
    for mutant in chosen:
        killed, seconds, tail = run(mutant, args.timeout)
        verdict = "killed" if killed else "SURVIVED"
        print(f"{verdict:9} {mutant.name:32} {seconds:6.0f} s  {mutant.why}", flush=True)
        print("          " + tail.replace("\n", "\n          "), flush=True)
        if not killed:
            survivors.append(mutant.name)
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed", flush=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
