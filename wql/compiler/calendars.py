"""Calendar arithmetic in a time zone: local days and months, counted from the local epoch.

A calendar grid counts in cells of a local day or a month (docs/semantics.md §2.21). Its cells are
numbered from the local epoch, 1970-01-01 00:00 in the zone: day d begins at local midnight of
1970-01-01 + d days, month m at local midnight on the first day of month m after January 1970. A
local day lasts 23, 24 or 25 hours where the zone changes its offset; a month 28 to 31 days. Values
are the attribute's base units: microseconds since the epoch (UTC) for a TIMESTAMP, days since the
epoch for a DATE, which has no time of day and no zone.

The reference evaluator computes calendar windows from these functions (Python's zoneinfo); the
generated jobs compute the same cells with Spark's own time-zone functions.
"""

from __future__ import annotations

import difflib
from datetime import UTC, date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from wql.compiler.units import EPOCH_DATE

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_MICROS = 86_400_000_000


@cache
def zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def nearest_zones(name: str, count: int = 3) -> list[str]:
    """The zone names closest to a misspelt one: compared whole, and by the city part after the last '/'."""
    pool = {z.lower(): z for z in zone_names()}
    close = difflib.get_close_matches(name.lower(), list(pool), n=count, cutoff=0.5)
    city = name.rsplit("/", 1)[-1].lower().replace(" ", "_")
    by_city = sorted(z for z in zone_names() if z.rsplit("/", 1)[-1].lower() == city)
    found = [pool[c] for c in close] + [z for z in by_city if z.lower() not in close]
    return found[:count]


@cache
def zone(name: str) -> ZoneInfo:
    """The zone of an IANA name; KeyError where there is none (the caller says which names are near)."""
    if name not in zone_names():
        raise KeyError(name)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise KeyError(name) from None


def local(micros: int, name: str) -> datetime:
    """The wall-clock time in the zone of an instant (µs since the epoch)."""
    return (_EPOCH + timedelta(microseconds=micros)).astimezone(zone(name))


def day_of(micros: int, name: str) -> int:
    """The local day an instant falls on, counted from 1970-01-01."""
    return (local(micros, name).date() - EPOCH_DATE).days


def month_of(micros: int, name: str) -> int:
    """The month an instant falls in, in the zone's calendar, counted from January 1970."""
    moment = local(micros, name)
    return (moment.year - 1970) * 12 + moment.month - 1


def day_start(day: int, name: str) -> int:
    """The instant (µs) local day `day` begins: its midnight, or where the zone skips midnight, the first
    moment of the day (the instant its clocks jumped forward at)."""
    when = EPOCH_DATE + timedelta(days=day)
    return _instant(datetime(when.year, when.month, when.day, tzinfo=zone(name)))


def month_start(month: int, name: str) -> int:
    """The instant (µs) month `month` begins: local midnight of its first day."""
    return day_start(month_first_day(month), name)


def month_first_day(month: int) -> int:
    """The first day of month `month` (from January 1970), as days since 1970-01-01."""
    year, index = divmod(month, 12)
    return (date(1970 + year, index + 1, 1) - EPOCH_DATE).days


def month_of_day(day: int) -> int:
    """The month a day (days since 1970-01-01) falls in, from January 1970."""
    when = EPOCH_DATE + timedelta(days=day)
    return (when.year - 1970) * 12 + when.month - 1


def local_text(micros: int, name: str) -> str:
    """An instant as the zone's wall clock shows it, as a TIMESTAMP literal reads it: 2024-03-10 00:00:00."""
    moment = local(micros, name)
    text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment:%H:%M:%S}"
    return text + (f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else "")


def parse_local(text: str, name: str) -> int:
    """A TIMESTAMP literal read as the zone's wall clock (an explicit offset in it wins), as µs since the epoch."""
    cleaned = text.strip().replace(" ", "T", 1) if "T" not in text else text.strip()
    moment = datetime.fromisoformat(cleaned)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone(name))
    return _instant(moment)


def offset_seconds(micros: int, name: str) -> int:
    """The zone's offset from UTC at an instant, in seconds."""
    offset = local(micros, name).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def _instant(moment: datetime) -> int:
    """µs since the epoch of an aware local time; a time the zone skipped maps, as PEP 495's fold=0 reads it,
    to the instant of the jump (a day that starts at 01:00 starts when the clocks jumped)."""
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * _DAY_MICROS) + delta.seconds * 1_000_000 + delta.microseconds
