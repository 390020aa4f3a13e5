"""Calendar windows: `[RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts]`, `[RANGE 30 DAYS SLIDE 1 DAY WATTR ts TIME ZONE
'America/New_York']`, `[RANGE 1 MONTH SLIDE 1 DAY WATTR ts CUMULATE]` (docs/semantics.md §2.21).

A grid whose cells are months, or local days of a zone: RANGE and SLIDE count them, and window w ends
on the cell o + (w+1)·s, its start RANGE cells before (CUMULATE: at its period's start), as on every
grid (§2.1, §2.13), only the cells are months of 28 to 31 days and local days of 23 to 25 hours. Months
are always a calendar unit; days and weeks are one where the spec names a TIME ZONE (without one they
stay fixed lengths, as they always were). A DATE has no time of day and no zone: its months are the
calendar's own. CUMULATE may grow month-long periods day by day (month to date): then the cells are
days, the periods months, and the window w is the days of w's month up to day w.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from wql.compiler import calendars, sections
from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import basis
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.grid import Grid
from wql.compiler.kinds.shapes import GridShape, Shape
from wql.compiler.schema import Domain
from wql.compiler.units import Number, format_date, parse_date
from wql.compiler.windows import Attribute, Calendar, CalendarUnit, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNameError, WQLNotSupportedError, WQLSemanticError, WQLTypeError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section

Family = Literal["day", "month", "fixed"]  # what a quantity counts: months, local days, or a fixed duration
WEEK_ORIGIN = 4  # 1970-01-05, a Monday: calendar weeks start on Monday, as ISO 8601's do (the epoch was a Thursday)


class CalendarGrid(Grid):
    """Sliding, tumbling and CUMULATE windows whose cells are months or a zone's local days."""

    name = "calendar"

    def matches(self, window: Window) -> bool:
        return window.calendar is not None

    def shape(self, window: Window) -> Shape:
        return GridShape("period" if window.form is Form.CUMULATE else "range", window.calendar)

    # ---------------------------------------------------------------- explain
    def classify(self, window: Window) -> Classification:
        return Classification(WindowClass.CF, "none", f"{self.cells(window)} wids(t) follows from t and the spec alone")

    def cells(self, window: Window) -> str:
        calendar = calendar_of(window)
        if calendar.cell == "month":
            return f"a grid of months{' in ' + window.zone if window.zone else ''}:"
        return f"a grid of {window.zone + chr(39) + 's' if window.zone else 'the'} local days:"

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        calendar = calendar_of(window)
        zone = f" in {window.zone}" if window.zone else ""
        if window.form is Form.CUMULATE:
            steps = "day by day" if calendar.mixed else f"by {self.amount(window, window.slide, calendar.cell)}"
            return (
                f"calendar{partitioned} cumulating window{zone}: each period of "
                f"{self.amount(window, window.range, calendar.period)} grows {steps} from its start"
            )
        shape = "tumbling" if window.range == window.slide else "sliding"
        if window.range is not None and window.slide is not None and window.range < window.slide:
            shape = "sampling (SLIDE > RANGE leaves gaps)"
        return f"calendar{partitioned} {shape} window of {self.amount(window, window.range, calendar.period)}{zone}"

    def basis(self, window: Window) -> str:
        return basis(window)

    def amount(self, window: Window, value: Number | None, unit: CalendarUnit) -> str:
        assert value is not None
        count = int(value)
        word = unit if count == 1 else f"{unit}s"
        return f"{count} {'local ' if unit == 'day' and window.zone else ''}{word}"

    def value(self, window: Window) -> str:
        calendar = calendar_of(window)
        return f"{calendar.cell}(t.{window.attr.name})"

    def wids(self, window: Window) -> str:
        calendar = calendar_of(window)
        a, note = self.value(window), self.cell_note(window)
        if calendar.mixed:
            return f"wids(t) = {a} … the last day of its period,  {note}"
        r, s_ = int(window.range or 1), int(window.slide or 1)
        t = f"{a} − {int(window.origin)}" if window.origin else a
        first = t if s_ == 1 else f"⌊({t}) / {s_}⌋"
        if window.form is Form.CUMULATE:
            m = r // s_
            last = f"{m}·(⌊({t}) / {r}⌋ + 1) − 1"
        elif s_ == 1:
            last = f"{t} + {r - 1}" if r > 1 else ""
        else:
            last = f"⌊({t} + {r}) / {s_}⌋ − 1"
        return f"wids(t) = {first}{' … ' + last if last else ''},  {note}"

    def extent(self, window: Window) -> str:
        calendar = calendar_of(window)
        a, note = self.value(window), self.cell_note(window)
        if calendar.mixed:
            return f"extent(w) = {{ t | w's period's first day ≤ {a} ≤ w }},  {note}"
        r, s_ = int(window.range or 1), int(window.slide or 1)
        o = f"{int(window.origin)} + " if window.origin else ""
        end = f"{o}w + 1" if s_ == 1 else f"{o}(w+1)·{s_}"
        if window.form is Form.CUMULATE:
            start = f"{o}⌊w / {r // s_}⌋·{r}"
        elif s_ == 1:
            start = f"{o}w" + (f" − {r - 1}" if r > 1 else "")
        else:
            start = f"{end} − {r}"
        return f"extent(w) = {{ t | {start} ≤ {a} < {end} }},  {note}"

    def cell_note(self, window: Window) -> str:
        """What the cells in the formulas are."""
        calendar = calendar_of(window)
        if calendar.cell == "month" or calendar.mixed:
            months = "month(t) = months from January 1970 to t's month"
            if calendar.mixed:
                days = "day(t) = local days from 1970-01-01 to t's day" if window.zone else "day(t) = days from 1970"
                return f"{days}, {months}{self.zone_note(window)}"
            return months + self.zone_note(window)
        return "day(t) = local days from 1970-01-01 to t's day" + self.zone_note(window)

    def zone_note(self, window: Window) -> str:
        return f", in {window.zone}" if window.zone else ""

    def cited(self, window: Window) -> tuple[Section, ...]:
        cumulate = (sections.CUMULATE,) if window.form is Form.CUMULATE else ()
        return (sections.CALENDAR, *cumulate, *self.gaps(window))

    def facts(self, window: Window) -> dict[str, object]:
        out = super().facts(window)
        out["time_zone"] = window.zone
        out["local_windows"] = self.local_windows(window)
        return out

    def local_windows(self, window: Window, count: int = 3) -> list[str]:
        """A few windows as the zone's clock shows them: around the zone's first change of offset in 2024 if it
        has one (a 23- or 25-hour day), else around the end of February 2024 (a leap day)."""
        moment = first_change(window.zone, 2024) if window.zone else None
        shown = moment if moment is not None else calendars.day_start(calendars.month_first_day(650) - 1, "UTC")
        value = shown if window.zone is not None else (shown // 86_400_000_000)
        holding = [w for w in self.candidates(window, [value]) if self.bounds(window, w)[0] <= value]
        first = next(w for w in holding if value < self.bounds(window, w)[1]) - count // 2
        return [self.local_text(window, *self.bounds(window, w)) for w in range(first, first + count)]

    def local_text(self, window: Window, lo: Number, hi: Number) -> str:
        """A window as the zone's clock shows it, with its length where that is not whole days."""
        if window.zone is None:  # a DATE
            return f"[{format_date(int(lo))}, {format_date(int(hi))})"
        start, end = calendars.local(int(lo), window.zone), calendars.local(int(hi), window.zone)
        text = f"[{start:%Y-%m-%d %H:%M} {start.tzname()}, {end:%Y-%m-%d %H:%M} {end.tzname()})"
        days, rest = divmod(int(hi) - int(lo), 86_400_000_000)
        if rest:
            hours = f"{rest / 3_600_000_000:g} h"
            text += f"  ({f'{days} d ' if days else ''}{hours})"
        return text

    def range_text(self, window: Window) -> str:
        assert window.range is not None
        return window.amount_text(window.range, window.units[0], period=True)

    def slide_text(self, window: Window) -> str:
        assert window.slide is not None
        return window.amount_text(window.slide, window.units[1])

    # ---------------------------------------------------------------- the reference evaluator
    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        """[lo, hi) of window w, in the attribute's base units, from the zone's calendar."""
        calendar = calendar_of(window)
        assert window.range is not None and window.slide is not None
        origin, r, s = int(window.origin), int(window.range), int(window.slide)
        if calendar.mixed:
            month = calendars.month_of_day(w)
            first = origin + ((month - origin) // r) * r
            return self.point(window, calendars.month_first_day(first), "day"), self.point(window, w + 1, "day")
        end = origin + (w + 1) * s
        start = origin + (w // (r // s)) * r if window.form is Form.CUMULATE else end - r
        return self.point(window, start, calendar.cell), self.point(window, end, calendar.cell)

    def point(self, window: Window, cell: int, unit: CalendarUnit) -> Number:
        """Where a cell begins, in the attribute's base units: an instant (µs), or a DATE's day."""
        day = calendars.month_first_day(cell) if unit == "month" else cell
        if window.zone is None:  # a DATE: days are its base units
            return day
        return calendars.day_start(day, window.zone)

    def cell_of(self, window: Window, value: Number) -> int:
        """The cell a value (base units) falls in."""
        calendar = calendar_of(window)
        if window.zone is None:
            return calendars.month_of_day(int(value)) if calendar.cell == "month" else int(value)
        if calendar.cell == "month":
            return calendars.month_of(int(value), window.zone)
        return calendars.day_of(int(value), window.zone)

    def candidates(self, window: Window, values: list[Number]) -> range:
        """Window-ids any of these values can be in (cells, counted in slides), and some on either side."""
        if not values:
            return range(0)
        calendar = calendar_of(window)
        assert window.range is not None and window.slide is not None
        low, high = (self.cell_of(window, v) for v in (min(values), max(values)))
        if calendar.mixed:  # a day's windows: from its own to its period's last day
            r, o = int(window.range), int(window.origin)
            period = (calendars.month_of_day(high) - o) // r
            return range(low - 2, calendars.month_first_day(o + (period + 1) * r) + 2)
        s, o = int(window.slide), int(window.origin)
        reach = int(window.range) // s + 2
        return range((low - o) // s - 2, (high - o) // s + reach + 2)

    # ---------------------------------------------------------------- on a stream
    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        what = "local days" if calendar_of(query.window).cell == "day" else "months"
        return f"cells ({what}) of the open windows: {per}, at most about {reach} in cells + 1, however many rows"

    def refuse_on_stream(self, query: Query) -> None:
        """A stream's punctuation and SLACK are instants; the grid's cells follow from them exactly."""


def first_change(zone: str, year: int) -> int | None:
    """The first local day of a year on which the zone changes its offset, as an instant (µs) in that day."""
    first = calendars.day_of(calendars.day_start(calendars.month_first_day((year - 1970) * 12), zone) + 1, zone)
    offset = calendars.offset_seconds(calendars.day_start(first, zone), zone)
    for day in range(first + 1, first + 366):
        start = calendars.day_start(day, zone)
        if calendars.offset_seconds(start + 86_400_000_000, zone) != offset:
            return start + 43_200_000_000  # noon of the day the change happens on, or near it
        offset = calendars.offset_seconds(start, zone)
    return None


def calendar_of(window: Window) -> Calendar:
    assert window.calendar is not None
    return window.calendar


# ------------------------------------------------------------------ resolution


def time_zone(clauses: Clauses, attr: Attribute) -> str | None:
    """TIME ZONE's zone, checked: an IANA name (a near one suggested), on a TIMESTAMP attribute."""
    clause = clauses.get(ast.TimeZoneClause)
    if clause is None:
        return None
    assert isinstance(clause, ast.TimeZoneClause)
    if attr.domain is not Domain.TIMESTAMP:
        what = "a DATE has no time of day" if attr.domain is Domain.DATE else f"'{attr.name}' is not a TIMESTAMP"
        raise WQLSemanticError(
            f"TIME ZONE applies to TIMESTAMP attributes: {what}",
            span=clause.span,
            hint="a DATE's days and months are the calendar's already: drop TIME ZONE"
            if attr.domain is Domain.DATE
            else "window a TIMESTAMP column (WATTR ts)",
        )
    try:
        calendars.zone(clause.zone)
    except KeyError:
        near = calendars.nearest_zones(clause.zone)
        hint = f"did you mean {' or '.join(repr(z) for z in near)}?" if near else "name an IANA zone: 'Area/City'"
        raise WQLNameError(f"unknown time zone '{clause.zone}'", span=clause.span, hint=hint) from None
    return clause.zone


def family(quantity: ast.Quantity | None, zone: str | None, attr: Attribute) -> Family | None:
    """What a RANGE or SLIDE counts: months always, days and weeks where a zone makes them local days."""
    if quantity is None or quantity.unit is None:
        return None
    if quantity.unit.is_calendar:
        return "month"
    if quantity.unit in (ast.Unit.DAYS, ast.Unit.WEEKS) and (zone is not None or attr.domain is Domain.DATE):
        return "day"  # a DATE's days are the calendar's
    return "fixed"


def is_calendar(rng: ast.RangeClause | None, slide: ast.SlideClause | None, zone: str | None, attr: Attribute) -> bool:
    """Whether a spec is a calendar grid: it counts months, or local days in a zone (a DATE's days alone are the
    fixed grid of days they always were)."""
    families = {family(c.quantity if c else None, zone, attr) for c in (rng, slide)}
    return "month" in families or ("day" in families and zone is not None)


def resolve_calendar(
    clauses: Clauses,
    rng: ast.RangeClause | None,
    slide: ast.SlideClause | None,
    attr: Attribute,
    end_attr: Attribute | None,
    unbounded: bool,
    zone: str | None,
) -> Window:
    """A grid counted in months or local days: the attribute, the units, the grid's origin (ALIGN)."""
    spot = next(c.quantity for c in (rng, slide) if c is not None and c.quantity is not None)
    _check_attribute(attr, end_attr, spot, unbounded)
    if zone is None and attr.domain is Domain.TIMESTAMP:
        zone = "UTC"
        clauses.notes.append("TIME ZONE 'UTC' (months count in UTC unless the spec names a zone)")
    range_q = rng.quantity if rng is not None else None
    slide_q = slide.quantity if slide is not None else None
    if slide_q is None:
        assert range_q is not None
        slide_q = range_q
        clauses.notes.append("SLIDE = RANGE (tumbling: no SLIDE given)")
    if range_q is None:
        range_q = slide_q
        clauses.notes.append("RANGE = SLIDE (tumbling: no RANGE given)")
    cumulate = clauses.get(ast.CumulateClause)
    form = Form.CUMULATE if cumulate is not None else Form.SLIDING
    period, range_value = _amount(range_q, zone, attr, "RANGE")
    cell, slide_value = _amount(slide_q, zone, attr, "SLIDE")
    _check_units(range_q, slide_q, period, cell, range_value, slide_value, form, zone)
    calendar = Calendar(cell, period)  # type: ignore[arg-type]
    origin = _origin(clauses, calendar, range_value, slide_q, form, zone)
    for clause_type, word in ((ast.KafkaClause, "KAFKA"), (ast.FullClause, "FULL"), (ast.OwnEndClause, "OWN END")):
        found = clauses.get(clause_type)
        if found is not None:
            raise WQLSemanticError(f"{word} does not apply to calendar windows", span=found.span)
    return Window(
        form=form,
        attr=attr,
        range=range_value,
        slide=slide_value,
        partition_by=clauses.partition(),
        origin=origin,
        slack=clauses.slack(attr),
        defaults=tuple(clauses.notes),
        units=(range_q.unit, slide_q.unit),
        slack_unit=clauses.slack_unit(),
        **clauses.variants(form, None),
        zone=zone,
        calendar=calendar,
    )


def _check_attribute(attr: Attribute, end_attr: Attribute | None, spot: ast.Quantity, unbounded: bool) -> None:
    if attr.domain not in (Domain.TIMESTAMP, Domain.DATE):
        raise WQLTypeError(
            f"months and local days count in a calendar, and '{attr.name}' is not a TIMESTAMP or DATE",
            span=spot.span,
            hint="window a TIMESTAMP or DATE column, or give a number without a unit",
        )
    if end_attr is not None:
        raise WQLNotSupportedError("calendar windows over interval events", span=spot.span)
    if unbounded:
        raise WQLNotSupportedError(
            "landmark windows (RANGE UNBOUNDED) on a calendar", span=spot.span, hint="CUMULATE over a long RANGE"
        )


def _amount(quantity: ast.Quantity, zone: str | None, attr: Attribute, what: str) -> tuple[Family, int]:
    """A RANGE or SLIDE in calendar units: months, or days (a week is seven); a fixed duration stays fixed."""
    unit = quantity.unit
    kind = family(quantity, zone, attr)
    value = quantity.value
    if kind is None or kind == "fixed" or unit is None:
        return "fixed", 0
    count = value * (unit.months if unit.is_calendar else 7 if unit is ast.Unit.WEEKS else 1)
    if value <= 0 or count != count.to_integral_value():
        raise WQLTypeError(f"{what} must be a whole, positive number of {kind}s", span=quantity.span)
    return kind, int(count)


def _check_units(
    range_q: ast.Quantity,
    slide_q: ast.Quantity,
    period: Family,
    cell: Family,
    range_value: int,
    slide_value: int,
    form: Form,
    zone: str | None,
) -> None:
    """A calendar grid is whole cells: RANGE and SLIDE in one unit, or CUMULATE's month periods of days."""
    place = f"in {zone}" if zone else "on a calendar"
    if "fixed" in (period, cell):
        fixed, other = (range_q, slide_q) if period == "fixed" else (slide_q, range_q)
        length = "a month lasts 28 to 31 days" if "month" in (period, cell) else f"a local day {place} lasts 23 to 25 h"
        raise WQLSemanticError(
            f"{length}, so no grid of whole cells holds both {_text(range_q)} and {_text(slide_q)}",
            span=fixed.span,
            hint=f"count both in {'months' if 'month' in (period, cell) else 'days'}, or both in fixed units "
            f"(e.g. {'24 HOURS' if other.unit in (ast.Unit.DAYS, ast.Unit.WEEKS) else '30 DAYS'})",
        )
    if form is Form.CUMULATE:
        _check_cumulate(range_q, slide_q, period, cell, range_value, slide_value)
    elif period != cell:
        raise WQLSemanticError(
            f"a window of {_text(range_q)} holds a varying number of days, so it cannot slide by days",
            span=slide_q.span,
            hint="slide by whole months (SLIDE 1 MONTH), or count the window in days (RANGE 30 DAYS), or grow "
            "month to date with CUMULATE",
        )


def _check_cumulate(
    range_q: ast.Quantity, slide_q: ast.Quantity, period: Family, cell: Family, range_value: int, slide_value: int
) -> None:
    if period == "day" and cell == "month":
        raise WQLSemanticError(
            "CUMULATE grows a period by SLIDE: a period of days cannot grow by months", span=slide_q.span
        )
    if period == "month" and cell == "day" and slide_value != 1:
        raise WQLSemanticError(
            f"a month does not hold a whole number of {_text(slide_q)} steps",
            span=slide_q.span,
            hint="CUMULATE over months grows by 1 DAY (month to date, every day) or by whole months",
        )
    if period == cell and (slide_value > range_value or range_value % slide_value):
        raise WQLSemanticError(
            "CUMULATE needs a RANGE that is a whole number of SLIDEs: each period ends with its last window",
            span=slide_q.span,
        )


def _text(quantity: ast.Quantity) -> str:
    assert quantity.unit is not None
    return f"{format(quantity.value, 'f')} {quantity.unit.spelled(quantity.value)}"


def _origin(
    clauses: Clauses, calendar: Calendar, range_value: int, slide_q: ast.Quantity, form: Form, zone: str | None
) -> int:
    """The grid's origin in period units (months, or days): ALIGN's local date, the epoch, or for weeks in a zone
    1970-01-05, a Monday."""
    clause = clauses.get(ast.AlignClause)
    if clause is None:
        if calendar.period == "day" and slide_q.unit is ast.Unit.WEEKS and zone is not None:
            clauses.notes.append("ALIGN TIMESTAMP '1970-01-05' (calendar weeks start on Monday, as ISO weeks do)")
            return WEEK_ORIGIN
        return 0
    assert isinstance(clause, ast.AlignClause)
    if not isinstance(clause.value, str):
        what = "FIRST" if clause.value is None else "a number"
        raise WQLSemanticError(
            f"ALIGN on a calendar grid takes a date, not {what}",
            span=clause.span,
            hint="e.g. ALIGN TIMESTAMP '2024-04-01' (fiscal years from April)",
        )
    day = _local_midnight(clause, zone)
    if calendar.period == "month":
        first = calendars.month_first_day(calendars.month_of_day(day))
        if day != first:
            raise WQLSemanticError(
                f"months start on the first: ALIGN '{clause.value}' is no month's first day",
                span=clause.span,
                hint=f"ALIGN TIMESTAMP '{format_date(first)}'",
            )
        value = calendars.month_of_day(day)
    else:
        value = day
    if clause.anchor == "start" and form is not Form.CUMULATE:
        value += range_value
    return value


def _local_midnight(clause: ast.AlignClause, zone: str | None) -> int:
    """ALIGN's date, as days from 1970-01-01, checked to be a local midnight (a grid's cells start at one)."""
    assert isinstance(clause.value, str)
    text = clause.value.strip()
    date_part, _, time_part = text.replace("T", " ").partition(" ")
    try:
        day = parse_date(date_part)
    except ValueError:
        raise WQLTypeError(
            f"ALIGN '{clause.value}' is not a date", span=clause.span, hint="write ALIGN TIMESTAMP 'YYYY-MM-DD'"
        ) from None
    if time_part.strip() not in ("", "00:00", "00:00:00") and not time_part.strip().startswith("00:00:00.000"):
        where = f" in {zone}" if zone else ""
        raise WQLSemanticError(
            f"calendar cells start at local midnight{where}: ALIGN '{clause.value}' is not one",
            span=clause.span,
            hint=f"ALIGN TIMESTAMP '{date_part}'",
        )
    return day


KIND = CalendarGrid()
