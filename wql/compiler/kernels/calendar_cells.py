"""A calendar grid's cells in a job: months and a zone's local days, in Spark's own functions.

Copied into a job whose window counts months or local days (docs/semantics.md §2.21). A cell is
numbered from the local epoch: months from January 1970, days from 1970-01-01. The job's session counts
in UTC (spark.sql.session.timeZone), the frame from_utc_timestamp and to_utc_timestamp take.
"""


def calendar_cell(value, unit, zone=None):
    """The cell a TIMESTAMP (read in `zone`) or DATE column falls in: its month, or its local day."""
    from pyspark.sql import functions as F

    moment = value if zone is None else F.from_utc_timestamp(value, zone)
    if unit == "month":
        return (F.year(moment) - 1970) * 12 + F.month(moment) - 1
    return F.unix_date(F.to_date(moment))


def calendar_cell_of(value, unit, zone=None):
    """The cell of a value in the attribute's base units (µs for a TIMESTAMP, days for a DATE): a stream's
    punctuation, a late tuple."""
    from pyspark.sql import functions as F

    moment = F.timestamp_micros(value) if zone is not None else F.date_from_unix_date(value)
    return calendar_cell(moment, unit, zone)


def calendar_point(cell, unit, zone=None):
    """Where a cell begins: the instant of local midnight on its first day, or that day (a DATE)."""
    from pyspark.sql import functions as F

    epoch = F.lit("1970-01-01").cast("date")
    day = F.add_months(epoch, cell.cast("int")) if unit == "month" else F.date_from_unix_date(cell)
    return day if zone is None else F.to_utc_timestamp(day.cast("timestamp"), zone)


def month_of_day(day):
    """The month (from January 1970) that a day (from 1970-01-01) falls in."""
    from pyspark.sql import functions as F

    moment = F.date_from_unix_date(day)
    return (F.year(moment) - 1970) * 12 + F.month(moment) - 1


def month_first_day(month):
    """The first day (from 1970-01-01) of a month (from January 1970)."""
    from pyspark.sql import functions as F

    return F.unix_date(F.add_months(F.lit("1970-01-01").cast("date"), month.cast("int")))
