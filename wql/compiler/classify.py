"""A window's class (docs/semantics.md §5), its name in words, and its wids and extent formulas.

Each window kind (`wql.compiler.kinds`) knows its own; these ask it.
"""

from __future__ import annotations

from wql.compiler.classes import Classification, WindowClass, ordinal
from wql.compiler.kinds import kind_of
from wql.compiler.windows import Window


def classify(window: Window) -> Classification:
    return kind_of(window).classify(window)


def describe_kind(window: Window) -> str:
    """A one-line name for the window, as a user would say it."""
    return kind_of(window).describe(window)


def wids_formula(window: Window) -> str:
    return kind_of(window).wids(window)


def extent_formula(window: Window) -> str:
    return kind_of(window).extent(window)


__all__ = ["Classification", "WindowClass", "classify", "describe_kind", "extent_formula", "ordinal", "wids_formula"]
