"""Window and cell edges on DOUBLE attributes, exact where a floor of a quotient is not.

Copied into jobs whose window attribute is a DOUBLE (the job defines ORIGIN,
SLIDE and RANGE). A value on an edge, like 0.3 with SLIDE 0.1, can land on
either side of a floor of (t - ORIGIN) / SLIDE; these compare t with the edges
themselves, so every plan places it where the extent formula does.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from pyspark.sql import functions as F

    from wql.compiler.kernels.job import ORIGIN, RANGE, SLIDE


def first_window(t):
    """The first window holding t: the least w with t < ORIGIN + (w + 1) * SLIDE, exact on doubles."""
    w = F.floor((t - ORIGIN) / SLIDE)
    return F.when(t < ORIGIN + w * SLIDE, w - 1).when(t >= ORIGIN + (w + 1) * SLIDE, w + 1).otherwise(w)


def last_window(t):
    """The last window holding t: the greatest w with ORIGIN + (w + 1) * SLIDE - RANGE <= t."""
    w = F.floor((t - ORIGIN + RANGE) / SLIDE) - 1
    too_late = ORIGIN + (w + 1) * SLIDE - RANGE > t
    one_more = ORIGIN + (w + 2) * SLIDE - RANGE <= t
    return F.when(too_late, w - 1).when(one_more, w + 1).otherwise(w)


def cell_of(t, width):
    """The cell of t on the grid ORIGIN + k * width, exact on doubles for whole-number widths."""
    c = F.floor((t - ORIGIN) / width)
    return F.when(t < ORIGIN + c * width, c - 1).when(t >= ORIGIN + (c + 1) * width, c + 1).otherwise(c)


def last_window_before(e):
    """Interval events [t, e): the last window starting before e, the greatest w with
    ORIGIN + (w + 1) * SLIDE - RANGE < e."""
    w = F.ceil((e - ORIGIN + RANGE) / SLIDE) - 2
    too_late = ORIGIN + (w + 1) * SLIDE - RANGE >= e
    one_more = ORIGIN + (w + 2) * SLIDE - RANGE < e
    return F.when(too_late, w - 1).when(one_more, w + 1).otherwise(w)


def cell_before(e, width):
    """Interval events [t, e): the cell holding the last instant before e, the cell of e or the one before
    when e is its edge."""
    c = cell_of(e, width)
    return F.when(ORIGIN + c * width == e, c - 1).otherwise(c)
