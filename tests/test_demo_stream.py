"""`make demo-stream`'s generator follows the stream: a file lands once the trigger over the one before
it is done, so a slow start of Spark does not land every file before the first trigger prints."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT

GENERATE = EXAMPLES / "streams" / "generate.py"


def landed(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("part-*.csv"))


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_generator_lands_a_file_per_trigger(tmp_path: Path) -> None:
    landing, checkpoint = tmp_path / "landing", tmp_path / "checkpoint"
    command = [sys.executable, str(GENERATE), str(landing), "--files", "3", "--pause", "0", "--follow", str(checkpoint)]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL) as generator:
        try:
            assert wait_for(lambda: landed(landing) == ["part-0000.csv"])
            time.sleep(1)  # Spark is still starting: nothing more lands
            assert landed(landing) == ["part-0000.csv"]
            (checkpoint / "commits").mkdir(parents=True)
            (checkpoint / "commits" / "0").write_text("v1\n")  # the first trigger is done
            assert wait_for(lambda: len(landed(landing)) == 2)
            time.sleep(1)
            assert len(landed(landing)) == 2
            (checkpoint / "commits" / "1").write_text("v1\n")
            assert wait_for(lambda: len(landed(landing)) == 3)
            assert generator.wait(timeout=20) == 0
        finally:
            generator.kill()


def test_make_demo_stream_follows_its_checkpoint() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("demo-stream:") :]
    assert "--follow build/demo-stream/checkpoint" in recipe and "--checkpoint build/demo-stream/checkpoint" in recipe
