"""What a stream cannot do exactly yet is refused with the reason, never run approximately."""

from __future__ import annotations

import pytest

from tests.streaming import compile_stream
from wql.grammar.errors import WQLNotSupportedError

REFUSED = {
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] LIMIT 3": "LIMIT on a stream",
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] EMIT EMPTY": "EMIT EMPTY on a stream",
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts ALIGN FIRST]": "ALIGN FIRST on a stream",
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS RATTR ts SLIDE 2 ROWS SATTR rank(ts)] EMIT CHANGES": (
        "EMIT CHANGES of windows named by rank"
    ),
}


@pytest.mark.parametrize("text", sorted(REFUSED))
def test_refused_with_the_reason(text: str) -> None:
    with pytest.raises(WQLNotSupportedError, match=REFUSED[text]):
        compile_stream(text).stream_code  # noqa: B018 - compiling is the act under test


def test_punctuation_rows_with_a_row_num_window_are_refused() -> None:
    with pytest.raises(WQLNotSupportedError, match="PUNCTUATION WHEN with a window over row_num"):
        compile_stream("SELECT count(*) AS n FROM s [RANGE 4 ROWS]", punctuation="n = 0").stream_code  # noqa: B018
