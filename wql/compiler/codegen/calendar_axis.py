"""A calendar grid's cells in generated code: months and a zone's local days (kernels.calendar_cells).

On a calendar grid (docs/semantics.md §2.21) the prepare stage gives each tuple its cell as `_t`
(months from January 1970, or local days from 1970-01-01), and RANGE, SLIDE and ORIGIN count cells, so
every stage of the grid family works in cells as it does on a uniform grid. Only where a cell meets
the attribute's own values does the calendar show: a tuple's cell, a punctuation's (on a stream) and
the instant a cell begins (window_start, window_end). The job's constant ZONE names the zone.
"""

from __future__ import annotations

from wql.compiler.codegen.emit import col, py
from wql.compiler.windows import Calendar, CalendarUnit, Window


def calendar(window: Window) -> Calendar:
    assert window.calendar is not None
    return window.calendar


def _zone(window: Window) -> str:
    return ", ZONE" if window.zone is not None else ""


def cell_of_attribute(window: Window) -> str:
    """A tuple's cell: the prepare stage's `_t` on a calendar grid."""
    return f"calendar_cell({col(window.attr.name)}, {py(calendar(window).cell)}{_zone(window)})"


def cell_of_base(window: Window, value: str) -> str:
    """The cell of a value in the attribute's base units (µs, or a DATE's days): a punctuation, a late tuple."""
    return f"calendar_cell_of({value}, {py(calendar(window).cell)}{_zone(window)})"


def month_first_day(month: str) -> str:
    """Days from 1970-01-01 to the first day of month `month` (a column of months from January 1970)."""
    return f"month_first_day({month})"


def month_of_day(day: str) -> str:
    """The month (from January 1970) a day (a column of days from 1970-01-01) falls in."""
    return f"month_of_day({day})"


def point(window: Window, cell: str, unit: CalendarUnit | None = None) -> str:
    """Where a cell begins, as the attribute's type: local midnight of its first day, or that day (a DATE)."""
    return f"calendar_point({cell}, {py(unit or calendar(window).cell)}{_zone(window)})"
