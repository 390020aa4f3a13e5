"""Builds SessionStore.java into build/session-store.jar against PySpark's own jars (javac --release 17).

    python benchmarks/session_store/session_jar.py        # prints the jar's path

probe.py calls jar() itself; the jar is rebuilt only when the source is newer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "SessionStore.java"
BUILD = HERE / "build"
JAR = BUILD / "session-store.jar"


def jar() -> str:
    """The prototype's jar, compiled when missing or older than its source."""
    if JAR.is_file() and JAR.stat().st_mtime >= SOURCE.stat().st_mtime:
        return str(JAR)
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    classes = BUILD / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    subprocess.run(
        ["javac", "-Xlint:all,-path,-serial", "--release", "17", "-cp", f"{jars}/*", "-d", str(classes), str(SOURCE)],
        check=True,
    )
    subprocess.run(["jar", "cf", str(JAR), "-C", str(classes), "."], check=True)
    return str(JAR)


if __name__ == "__main__":
    print(jar())
    sys.exit(0)
