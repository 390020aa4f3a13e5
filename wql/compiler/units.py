"""Quantities in a window attribute's own base units, and back to words.

Base units: microseconds for TIMESTAMP, days for DATE, rows for row_num, the
value itself for numbers. Integral domains use Python ints (exact); DOUBLE
attributes use floats, because the window edges are compared in the
attribute's own arithmetic (docs/semantics.md §3.3).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Literal

from wql.compiler.schema import Domain
from wql.grammar.ast import Quantity, Unit
from wql.grammar.errors import WQLTypeError

Number = int | float | Decimal  # Decimal: DECIMAL interval attributes, exact

DAY_MICROS = 86_400_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_DATE = date(1970, 1, 1)

# Largest first: a duration is shown in the largest unit that divides it.
_TIME_UNITS = (Unit.WEEKS, Unit.DAYS, Unit.HOURS, Unit.MINUTES, Unit.SECONDS, Unit.MILLISECONDS, Unit.MICROSECONDS)
_SHORT = {
    Unit.WEEKS: "w",
    Unit.DAYS: "d",
    Unit.HOURS: "h",
    Unit.MINUTES: "min",
    Unit.SECONDS: "s",
    Unit.MILLISECONDS: "ms",
    Unit.MICROSECONDS: "µs",
}


def to_base(quantity: Quantity, domain: Domain, attr: str, what: str, *, allow_negative: bool = False) -> Number:
    """Convert a RANGE/SLIDE/ALIGN/SLACK quantity to the attribute's base units, checking units."""
    value, unit = quantity.value, quantity.unit
    if not value.is_finite() or value.adjusted() > 25:
        raise WQLTypeError(f"{what}: the value is out of range for a window attribute", span=quantity.span)
    shown = f"{what} {_plain(value)}{' ' + unit.spelled(value) if unit else ''}"
    if not allow_negative and value <= 0:
        raise WQLTypeError(f"{shown}: must be positive", span=quantity.span)
    if unit is not None and unit.is_calendar:
        raise WQLTypeError(
            f"{shown}: a month has no fixed length, and {what} is a duration",
            span=quantity.span,
            hint=f"give {what} in DAYS, HOURS or smaller (months count windows on a calendar: RANGE 1 MONTH)",
        )
    if domain is Domain.TIMESTAMP:
        if unit is None:
            raise WQLTypeError(
                f"{shown} on TIMESTAMP '{attr}' needs a time unit",
                span=quantity.span,
                hint=f"write e.g. {what} {_plain(value)} SECONDS",
            )
        if unit is Unit.ROWS:
            raise WQLTypeError(
                f"{shown}: ROWS count arrivals, but '{attr}' is a TIMESTAMP",
                span=quantity.span,
                hint="use a time unit, or count rows with WATTR row_num",
            )
        return _integral(value * unit.micros, quantity, f"{shown} is finer than a microsecond")
    if domain is Domain.DATE:
        if unit is None or unit is Unit.ROWS or (unit.micros % DAY_MICROS):
            raise WQLTypeError(
                f"{shown}: DATE '{attr}' counts whole days",
                span=quantity.span,
                hint=f"write {what} n DAYS (or WEEKS)",
            )
        return _integral(value * unit.micros / DAY_MICROS, quantity, f"{shown} is not a whole number of days")
    if domain is Domain.ROW_NUM:
        if unit is not None and unit is not Unit.ROWS:
            raise WQLTypeError(
                f"{shown}: time units need a TIMESTAMP attribute, and row_num counts rows",
                span=quantity.span,
                hint=f"write {what} {_plain(value)} ROWS, or name a TIMESTAMP with WATTR",
            )
        return _integral(value, quantity, f"{shown} is not a whole number of rows")
    if domain in {Domain.INTEGER, Domain.FLOAT, Domain.DECIMAL}:
        if unit is Unit.ROWS:
            raise WQLTypeError(
                f"{shown}: ROWS count arrivals, but '{attr}' is a number",
                span=quantity.span,
                hint=f"drop the unit ({what} {_plain(value)}), or count rows with WATTR row_num",
            )
        if unit is not None:
            raise WQLTypeError(
                f"{shown}: time units need a TIMESTAMP attribute, and '{attr}' is a number",
                span=quantity.span,
                hint=f"drop the unit: {what} {_plain(value)} is in the units of '{attr}'",
            )
        if domain is Domain.INTEGER:
            return _integral(value, quantity, f"{shown} is not a whole number, and '{attr}' is an integer")
        if domain is Domain.DECIMAL:
            if abs(value) >= LIMIT or value.as_tuple().exponent < -18:  # type: ignore[operator]
                raise WQLTypeError("the value is out of range for a window attribute", span=quantity.span)
            return value
        if abs(value) >= LIMIT:
            raise WQLTypeError("the value is out of range for a window attribute", span=quantity.span)
        return float(value)
    raise WQLTypeError(f"'{attr}' cannot order windows", span=quantity.span)


LIMIT = 2**62  # base-unit values must fit Spark's 64-bit longs with room for window arithmetic


def _integral(value: Decimal, quantity: Quantity, message: str) -> int:
    if value != value.to_integral_value():
        raise WQLTypeError(message, span=quantity.span)
    return _bounded(int(value), quantity)


def _bounded(value: int, quantity: Quantity) -> int:
    if abs(value) >= LIMIT:
        raise WQLTypeError("the value is out of range: it does not fit a 64-bit window attribute", span=quantity.span)
    return value


def _plain(value: Decimal) -> str:
    return format(value, "f")


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch for an ISO timestamp; a timestamp without a zone is UTC."""
    cleaned = text.strip().replace(" ", "T", 1) if "T" not in text else text.strip()
    moment = datetime.fromisoformat(cleaned)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def parse_date(text: str) -> int:
    """Days since the epoch for an ISO date."""
    return (date.fromisoformat(text.strip()) - EPOCH_DATE).days


def format_timestamp(micros: int) -> str:
    moment = EPOCH + timedelta(microseconds=micros)
    text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment:%H:%M:%S}"
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text


def format_date(days: int) -> str:
    day = EPOCH_DATE + timedelta(days=days)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def best_time_unit(micros: int, preferred: Unit | None = None) -> tuple[int, Unit]:
    """The amount and unit to show a duration in: the preferred unit if it divides, else the largest."""
    if preferred is not None and preferred.is_time and micros % preferred.micros == 0:
        return micros // preferred.micros, preferred
    for unit in _TIME_UNITS:
        if micros % unit.micros == 0:
            return micros // unit.micros, unit
    return micros, Unit.MICROSECONDS


def quantity_text(amount: Number, domain: Domain, preferred: Unit | None = None) -> str:
    """Base units back to WQL quantity text: 300000000 µs -> '5 MINUTES'."""
    if domain is Domain.TIMESTAMP:
        value, unit = best_time_unit(int(amount), preferred)
        return f"{value} {unit.spelled(Decimal(value))}"
    if domain is Domain.DATE:
        if preferred is Unit.WEEKS and int(amount) % 7 == 0:
            weeks = int(amount) // 7
            return f"{weeks} {Unit.WEEKS.spelled(Decimal(weeks))}"
        return f"{int(amount)} {Unit.DAYS.spelled(Decimal(int(amount)))}"
    if domain is Domain.ROW_NUM:
        return f"{int(amount)} {Unit.ROWS.spelled(Decimal(int(amount)))}"
    return number_text(amount)


def calendar_text(amount: int, unit: Literal["day", "month"], preferred: Unit | None = None) -> str:
    """A calendar amount as WQL: months (as QUARTERS or YEARS where preferred and whole), or days (as WEEKS)."""
    if unit == "month":
        chosen = preferred if preferred is not None and preferred.is_calendar else Unit.MONTHS
        if amount % chosen.months:
            chosen = Unit.MONTHS
        count = amount // chosen.months
        return f"{count} {chosen.spelled(Decimal(count))}"
    if preferred is Unit.WEEKS and amount % 7 == 0:
        return f"{amount // 7} {Unit.WEEKS.spelled(Decimal(amount // 7))}"
    return f"{amount} {Unit.DAYS.spelled(Decimal(amount))}"


def short_text(amount: Number, domain: Domain) -> str:
    """Compact form for formulas: 5 min, 30 s, 100 rows, 2.5."""
    if domain is Domain.TIMESTAMP:
        value, unit = best_time_unit(int(amount))
        return f"{value} {_SHORT[unit]}"
    if domain is Domain.DATE:
        return f"{int(amount)} d"
    if domain is Domain.ROW_NUM:
        return f"{int(amount)}"
    return number_text(amount)


def number_text(amount: Number) -> str:
    if isinstance(amount, Decimal):
        return format(amount, "f")
    if isinstance(amount, float):
        text = repr(amount)
        return text[:-2] if text.endswith(".0") else text
    return str(amount)


def origin_text(origin: Number, domain: Domain) -> str:
    """The grid origin as WQL text for ALIGN."""
    if domain is Domain.TIMESTAMP:
        return f"TIMESTAMP '{format_timestamp(int(origin))}'"
    if domain is Domain.DATE:
        return f"TIMESTAMP '{format_date(int(origin))}'"
    return number_text(origin)
