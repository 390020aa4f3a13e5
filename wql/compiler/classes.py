"""Window classes (docs/semantics.md §5): what context a tuple's window-ids need.

The class says what context wids(t) needs: none (CF), only earlier tuples (FCF), later tuples within a
known range of window-ids (FCB), or later tuples without such a bound (FCU). Each window kind
(`wql.compiler.kinds`) classifies its windows; these are the words it classifies them in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class WindowClass(Enum):
    CF = "CF"
    FCF = "FCF"
    FCB = "FCB"
    FCU = "FCU"


@dataclass(frozen=True)
class Classification:
    window_class: WindowClass
    context: str  # "none", "backward", "forward, bounded", "forward, unbounded"
    reason: str


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, …"""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"
