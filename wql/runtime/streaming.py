"""Running a query's streaming job: the one path behind `wql run --stream`, `CompiledQuery.start`, the REPL
and `%%wql --stream`.

The job's code is what `wql compile --stream` prints; it is loaded as a module
and its own functions are called (start_stream, run_trigger, drain_stream), so
what runs is exactly what was printed. This module only adds what a session
needs around it: sinks that hand windows to Python (a callback, a list, the
terminal), trigger reports, a temporary checkpoint when none is given, and
waiting, stopping and draining.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wql.grammar.errors import WQLRuntimeError

# (the trigger's windows as a DataFrame, the trigger's number or "drain") -> how many rows it took, or None
Sink = Callable[[Any, int | str], int | None]


@dataclass
class Trigger:
    """What one trigger did, as the job reported it."""

    trigger: int | str
    rows: int
    late: int
    malformed: int
    nulls: int
    punctuations: int
    windows: int
    punctuation: str
    state_rows: int

    def line(self) -> str:
        """The one-line status a terminal shows after each trigger."""
        label = "drain" if self.trigger == "drain" else f"trigger {self.trigger}"
        parts = [f"{counted(self.rows, 'row')} in"]
        if self.late:
            parts.append(f"{self.late:,} late")
        if self.malformed:
            parts.append(f"{self.malformed:,} malformed")
        if self.nulls:
            parts.append(f"{self.nulls:,} with no window attribute")
        if self.punctuations:
            parts.append(counted(self.punctuations, "punctuation row"))
        parts.append(f"{counted(self.windows, 'window')} emitted")
        parts.append(f"punctuation {self.punctuation}")
        parts.append(f"state {counted(self.state_rows, 'row')}")
        return f"{label}: " + ", ".join(parts)


def counted(n: int, noun: str) -> str:
    """`1 row`, `2 rows`: the status line is read by people, one trigger at a time."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@dataclass
class StreamRun:
    """A query running on Structured Streaming: Spark's StreamingQuery, the triggers so far, and the windows
    a Python sink collected (`rows`, when no other sink was given)."""

    spark: Any
    module: Any
    query: Any  # pyspark.sql.streaming.StreamingQuery; None for a run that only finishes a stopped drain
    checkpoint: str
    emit: Callable[[Any, str], int]
    temporary: bool = False
    on_trigger: Callable[[Trigger], None] | None = None
    triggers: list[Trigger] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def active(self) -> bool:
        return self.query is not None and bool(self.query.isActive)

    def wait(self, idle: float | None = None) -> None:
        """Until the query stops (a `once` run ends by itself) or, with `idle`, until no rows came for that long.
        A trigger's failure is raised as WQLRuntimeError naming the trigger and its cause."""
        if self.query is None:
            return
        try:
            self.module.await_stream(self.query, idle)
        except self.module.TriggerFailed as failed:
            raise trigger_failure(failed) from None

    def stop(self, *, drain: bool = False) -> None:
        """Stop the query; with `drain`, end the stream: every open window is emitted, once."""
        if self.query is not None and self.query.isActive:
            self.query.stop()
        if drain:
            self.drain()

    def drain(self) -> int:
        """End the stream: emit every window still open (the punctuation goes to +∞), once. The checkpoint
        then refuses to run again. Refused, in one line, while a trigger Spark logged has not finished."""
        try:
            return int(self.module.drain_stream(self.spark, self.checkpoint, self.emit, self._report))
        except self.module.TriggerUnfinished as unfinished:
            raise WQLRuntimeError(str(unfinished)) from None

    def close(self) -> None:
        """Stop, and remove the checkpoint if it was a temporary one."""
        self.stop()
        if self.temporary:
            shutil.rmtree(self.checkpoint, ignore_errors=True)

    def _report(self, status: dict[str, Any]) -> None:
        trigger = Trigger(**status)
        with self.lock:
            self.triggers.append(trigger)
        if self.on_trigger is not None:
            self.on_trigger(trigger)


def start(
    module: Any,
    spark: Any,
    *,
    paths: dict[str, str] | None = None,
    output: str | None = None,
    fmt: str = "csv",
    checkpoint: str | None = None,
    late: str | None = None,
    once: bool = False,
    sink: Sink | None = None,
    on_trigger: Callable[[Trigger], None] | None = None,
    max_files: int | None = None,
    interval: float | None = None,
    drain: bool = False,
) -> StreamRun:
    """Start a streaming job's query. Windows go to `output` (files, exactly once, with `checkpoint`), to
    `sink(windows, trigger)`, or are collected in `StreamRun.rows`. On a checkpoint whose drain was stopped
    halfway, `drain` gives a run with no query, whose drain() finishes it."""
    if output is not None and checkpoint is None:
        raise WQLRuntimeError(
            "a streaming output directory needs a checkpoint directory",
            hint="pass --checkpoint DIR: it records what was read and the open windows, so a restart resumes "
            "exactly once",
        )
    temporary = checkpoint is None
    checkpoint = checkpoint or tempfile.mkdtemp(prefix="wql-checkpoint-")
    run = StreamRun(
        spark=spark,
        module=module,
        query=None,
        checkpoint=checkpoint,
        emit=lambda result, name: 0,
        temporary=temporary,
        on_trigger=on_trigger,
    )

    if output is not None:
        emit = module.file_sink(output, fmt)
    else:

        def emit(result: Any, name: str) -> int:
            trigger: int | str = "drain" if name.startswith("drain") else int(name.rsplit("-", maxsplit=1)[-1])
            if sink is not None:  # returns how many rows it took, or None to have them counted
                taken = sink(result, trigger)
                return int(taken) if taken is not None else int(result.count())
            collected = result.collect()
            with run.lock:
                run.rows.extend(collected)
            return len(collected)

    run.emit = emit
    try:
        run.query = module.start_stream(
            spark, emit, checkpoint, paths or {}, late, fmt, once, run._report, max_files, interval
        )
    except module.StreamEnded as ended:
        if not drain or ended.finished:
            raise WQLRuntimeError(str(ended)) from None
    except ValueError as error:
        raise WQLRuntimeError(str(error)) from None
    return run


def trigger_failure(failed: Any) -> WQLRuntimeError:
    """A trigger's failure as one line: the trigger and its cause, told as a Spark error is."""
    from wql.runtime.errors import translate

    cause = translate(failed.error)
    return WQLRuntimeError(f"trigger {failed.trigger} failed: {cause.message}", hint=cause.hint)
