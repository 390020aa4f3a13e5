"""Errors raised while Spark runs a job become one clear line."""

from __future__ import annotations

from wql.runtime.errors import translate


def test_a_kernel_message_is_found_under_sparks_job_failure() -> None:
    """The JVM kernels' own words, not Spark's first line, which says only that a stage failed."""
    message = (
        "WQL's bins kernel holds each partition's tuples in memory, and 8,389,632 tuples (256 MB) do not fit in "
        "Spark's execution memory: raise spark.executor.memory"
    )
    text = (
        "An error occurred while calling o83.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, "
        f"most recent failure: Lost task 0.0 (TID 3): java.lang.IllegalStateException: {message}\n"
        "\tat wql.kernels.TaskMemory.reserve(TaskMemory.java:39)\n"
    )
    error = translate(RuntimeError(text), "traffic.wql #2")
    assert str(error).splitlines()[0] == f"traffic.wql #2: {message}"


def test_other_failures_keep_their_first_meaningful_line() -> None:
    """Spark's own errors say "Spark failed"; an error of the job's own Python code says what it is."""
    from py4j.protocol import Py4JError

    error = translate(Py4JError("Traceback (most recent call last):\nboom: the disk is full\n  at x"), "q")
    assert "Spark failed: boom: the disk is full" in str(error)
    error = translate(RuntimeError("Traceback (most recent call last):\nboom: the disk is full\n  at x"), "q")
    assert "q: RuntimeError: boom: the disk is full" in str(error) and "not in the data" in (error.hint or "")
