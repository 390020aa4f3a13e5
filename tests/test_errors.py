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


# ------------------------------------------------------------------ a data error, as Spark raises it

CAST_ERROR = (
    "An error occurred while calling o223.count.\n"
    ": org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value 'home' of the type "
    '"STRING" cannot be cast to "INT" because it is malformed. Correct the value as per the syntax, or change '
    "its target type. Use `try_cast` to tolerate malformed input and return NULL instead. SQLSTATE: 22018\n"
    "== SQL (line 1, position 5) ==\n"
    "SUM(CAST(page AS INT))\n"
    "    ^^^^^^^^^^^^^^^^^\n"
    "\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.invalidInputInCastToNumberError(Unknown Source)\n"
    "\tat org.apache.spark.sql.catalyst.util.UTF8StringUtils$.withException(UTF8StringUtils.scala:57)\n"
)
QUERY = "\n".join(
    [
        "CREATE STREAM clicks (page STRING, ts TIMESTAMP);",
        "SELECT sum(cast( page as int )) AS s",
        "FROM clicks [RANGE 1 HOUR];",
    ]
)


def test_a_data_error_is_its_cause_with_its_position_and_a_hint() -> None:
    from wql.runtime.errors import locate_in, spark_cause

    cause = spark_cause(CAST_ERROR)
    assert cause is not None
    assert cause.condition == "CAST_INVALID_INPUT" and cause.fragment == "CAST(page AS INT)"
    assert "Correct the value" not in cause.message and "SQLSTATE" not in cause.message
    start = QUERY.index("SELECT")
    error = translate(RuntimeError(CAST_ERROR), "query 1", locate=locate_in(QUERY, start, len(QUERY)), log="/tmp/x")
    assert error.message == (
        'query 1: The value \'home\' of the type "STRING" cannot be cast to "INT" because it is malformed, '
        "in cast( page as int ) at line 2, column 12"
    )
    assert error.hint and "try_cast" in error.hint
    rendered = error.render()
    assert len(rendered.splitlines()) == 2 and "\tat " not in rendered and "org.apache" not in rendered


def test_a_failure_without_a_cause_names_sparks_log_in_its_hint() -> None:
    error = translate(RuntimeError("java.lang.OutOfMemoryError\n\tat x.y(Z.java:1)"), "query 1", log="/tmp/spark.log")
    assert error.hint == "Spark's log has the details: /tmp/spark.log"
