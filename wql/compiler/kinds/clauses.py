"""A window spec's clauses, and what every kind resolves the same way: attributes, PATTR, ALIGN, SLACK.

Each kind resolves its own clauses in its module (`kinds.grid`, `kinds.cumulate`, `kinds.sessions`,
…); `kinds.resolve` says which kind a spec is and hands it the spec's `Clauses`, which find a clause,
refuse one given twice or where it does not apply, resolve the attributes against the stream and
record every default filled in (`notes`), so that `explain` can show the spec as it was understood.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from wql.compiler import calendars
from wql.compiler.schema import ROW_NUM, Domain, Stream
from wql.compiler.units import Number, origin_text, parse_date, parse_timestamp, to_base
from wql.compiler.windows import Attribute, Form, Slack
from wql.grammar import ast
from wql.grammar.errors import (
    WQLNameError,
    WQLNotSupportedError,
    WQLSemanticError,
    WQLTypeError,
    did_you_mean,
)


class Clauses:
    """The clauses of one window spec, by type, over the stream it windows."""

    def __init__(self, spec: ast.WindowSpec, stream: Stream) -> None:
        self.spec = spec
        self.stream = stream
        self.notes: list[str] = []
        self.clauses: dict[type, ast.WindowClause] = {}
        for clause in spec.clauses:
            clause_type = type(clause)
            if clause_type in self.clauses:
                word = clause_type.__name__.removesuffix("Clause").upper()
                raise WQLSemanticError(f"{word} is given twice", span=clause.span)
            self.clauses[clause_type] = clause

    def get(self, clause_type: type) -> ast.WindowClause | None:
        return self.clauses.get(clause_type)

    # attributes ------------------------------------------------------------
    def attribute(self, name: ast.Name, *, interval: bool = False) -> Attribute:
        if name.key == ROW_NUM:
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        column = self.stream.column(name.text)
        if column is None:
            candidates = [*self.stream.column_names, ROW_NUM]
            raise WQLNameError(
                f"unknown column '{name.text}' in stream '{self.stream.name}'",
                span=name.span,
                hint=did_you_mean(name.text, candidates) or f"columns are: {', '.join(candidates)}",
            )
        if self.stream.row_num is not None and column.name == self.stream.row_num:
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        if column.domain is Domain.OTHER:
            raise WQLTypeError(
                f"'{column.name}' is {column.type}, which cannot order windows",
                span=name.span,
                hint="a window attribute is a TIMESTAMP, DATE, number or row_num",
            )
        if column.domain is Domain.DECIMAL:
            if not interval:
                raise WQLNotSupportedError(
                    f"windows over DECIMAL attributes ('{column.name}') other than interval events",
                    span=name.span,
                    hint="declare the column as DOUBLE or BIGINT, or give events an end: WATTR (start, end)",
                )
            return Attribute(column.name, column.domain, decimal_scale(column.type))
        return Attribute(column.name, column.domain)

    def infer_attribute(self, quantity: ast.Quantity | None) -> Attribute:
        unit = quantity.unit if quantity else None
        where = quantity.span if quantity else self.spec.span
        if unit is ast.Unit.ROWS:
            self.notes.append("WATTR row_num (ROWS without an attribute count arrivals)")
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        if unit is None:
            raise WQLTypeError(
                "which attribute does the window range over?",
                span=where,
                hint="name it with WATTR (e.g. WATTR milepost), or give a unit (ROWS, SECONDS, …)",
            )
        stamps = [c for c in self.stream.columns if c.domain is Domain.TIMESTAMP]
        if not stamps and unit.micros % 86_400_000_000 == 0:
            stamps = [c for c in self.stream.columns if c.domain is Domain.DATE]
        if len(stamps) == 1:
            self.notes.append(f"WATTR {stamps[0].name} (the stream's only {stamps[0].type} column)")
            return Attribute(stamps[0].name, stamps[0].domain)
        if not stamps:
            raise WQLTypeError(
                f"time units need a TIMESTAMP attribute, and stream '{self.stream.name}' has none",
                span=where,
                hint="count rows instead (RANGE n ROWS), or declare a TIMESTAMP column",
            )
        raise WQLTypeError(
            f"stream '{self.stream.name}' has several TIMESTAMP columns ({', '.join(c.name for c in stamps)})",
            span=where,
            hint=f"say which one with WATTR, e.g. WATTR {stamps[0].name}",
        )

    # the whole spec ------------------------------------------------------------
    def interval_end(self, wattr: ast.WattrClause, start: Attribute) -> Attribute:
        end = self.attribute(wattr.attrs[1], interval=True)
        if start.is_row_num or end.is_row_num:
            raise WQLTypeError("interval events need two columns, not row_num", span=wattr.span)
        if start.domain is not end.domain or start.name == end.name:
            start_type = self.stream.require(start.name, None).type
            end_type = self.stream.require(end.name, None).type
            message = (
                f"an interval needs two attributes of one type: "
                f"'{start.name}' is {start_type}, '{end.name}' is {end_type}"
                if start.name != end.name
                else "an interval needs two different attributes"
            )
            raise WQLTypeError(message, span=wattr.span)
        return end

    def variants(self, form: Form, end_attr: Attribute | None) -> dict[str, bool]:
        """CLIP and SNAP, StreamInsight's variants of windows over interval events (sliding or tumbling)."""
        found: dict[str, bool] = {}
        for clause_type, name in ((ast.ClipClause, "clip"), (ast.SnapClause, "snap")):
            clause = self.get(clause_type)
            found[name] = clause is not None
            if clause is None:
                continue
            word = name.upper()
            if end_attr is None:
                raise WQLSemanticError(
                    f"{word} applies to interval events: name their start and end with WATTR (start, end)",
                    span=clause.span,
                )
            if form is Form.LANDMARK and name == "snap":
                raise WQLNotSupportedError("SNAP on landmark windows", span=clause.span)
        if found["clip"] and found["snap"]:
            clause = self.get(ast.SnapClause)
            assert clause is not None
            raise WQLSemanticError(
                "SNAP merges windows that hold the same events, but CLIP gives each window its own clipped events",
                span=clause.span,
                hint="drop one of them",
            )
        return found

    def reject_variant(self, clause_type: type, why: str) -> None:
        clause = self.get(clause_type)
        if clause is not None:
            word = clause_type.__name__.removesuffix("Clause").upper()
            raise WQLSemanticError(f"{word} does not apply: {why}", span=clause.span)

    # kinds -----------------------------------------------------------------------------
    def reject_variants(self, why: str) -> None:
        full = self.get(ast.FullClause)
        if full is not None:
            raise WQLSemanticError(f"FULL applies to count windows with SLIDE in ROWS: {why}", span=full.span)
        for clause_type, word in (
            (ast.CumulateClause, "CUMULATE"),
            (ast.KafkaClause, "KAFKA"),
            (ast.TimeZoneClause, "TIME ZONE"),
        ):
            clause = self.get(clause_type)
            if clause is not None:
                raise WQLSemanticError(f"{word} applies to grid windows: {why}", span=clause.span)
        align = self.get(ast.AlignClause)
        if isinstance(align, ast.AlignClause) and align.first:
            raise WQLSemanticError(f"ALIGN FIRST applies to grid windows: {why}", span=align.span)

    def partition(self) -> tuple[str, ...]:
        clause = self.get(ast.PattrClause)
        if clause is None:
            return ()
        assert isinstance(clause, ast.PattrClause)
        names: list[str] = []
        for name in clause.attrs:
            if name.key == ROW_NUM:
                raise WQLSemanticError("row_num cannot partition a stream: every row has its own", span=name.span)
            column = self.stream.require(name.text, name.span)
            if column.name in names:
                raise WQLSemanticError(f"PATTR names '{column.name}' twice", span=name.span)
            names.append(column.name)
        return tuple(names)

    def origin(self, attr: Attribute, range_value: Number | None, form: Form, zone: str | None = None) -> Number:
        """The grid's origin o in base units: ALIGN's value (START: + RANGE), else the epoch; with a TIME ZONE a
        timestamp is read as the zone's wall clock, and the epoch is 1970-01-01 00:00 there."""
        clause = self.get(ast.AlignClause)
        local_epoch = calendars.day_start(0, zone) if zone is not None else 0
        if clause is None:
            if zone is not None:
                self.notes.append(f"ALIGN TIMESTAMP '1970-01-01 00:00:00' (the epoch's midnight in {zone})")
            return 0.0 if attr.domain is Domain.FLOAT else Decimal(0) if attr.domain is Domain.DECIMAL else local_epoch
        assert isinstance(clause, ast.AlignClause)
        domain = attr.domain
        value: Number
        if clause.value is None:  # ALIGN [START] FIRST: an offset from the first tuple's value
            value = 0.0 if domain is Domain.FLOAT else 0
        elif isinstance(clause.value, str):
            if domain not in {Domain.TIMESTAMP, Domain.DATE}:
                raise WQLTypeError(
                    f"ALIGN takes a number here: '{attr.name}' is not a timestamp",
                    span=clause.span,
                )
            try:
                if domain is Domain.TIMESTAMP and zone is not None:
                    value = calendars.parse_local(clause.value, zone)
                elif domain is Domain.TIMESTAMP:
                    value = parse_timestamp(clause.value)
                else:
                    value = parse_date(clause.value.split(" ")[0].split("T")[0])
            except ValueError:
                raise WQLTypeError(
                    f"ALIGN '{clause.value}' is not a timestamp",
                    span=clause.span,
                    hint="write ALIGN TIMESTAMP 'YYYY-MM-DD HH:MM:SS' (UTC unless it names a zone)",
                ) from None
        else:
            value = to_base(clause.value, domain, attr.name, "ALIGN", allow_negative=True) + local_epoch
        if clause.anchor == "start" and form is Form.CUMULATE:
            pass  # a CUMULATE period starts where the previous one ends: START and END name one grid
        elif clause.anchor == "start":
            if range_value is None or form is Form.LANDMARK:
                raise WQLSemanticError("landmark windows have no start to align", span=clause.span)
            value = value + range_value
        if domain in {Domain.TIMESTAMP, Domain.DATE}:
            try:
                origin_text(value, domain)
            except (OverflowError, ValueError):
                raise WQLTypeError("ALIGN is outside the years 1 to 9999", span=clause.span) from None
        return value

    def slack(self, attr: Attribute, kafka: bool = False) -> Slack | None:
        """SLACK and its mode; `kafka`: the window is Kafka's sliding window, the only one whose late records
        Kafka's rule places."""
        clause = self.get(ast.SlackClause)
        if clause is None:
            return None
        assert isinstance(clause, ast.SlackClause)
        if clause.mode == "kafka" and not kafka:
            raise WQLSemanticError(
                "SLACK … KAFKA is Kafka's late-record rule for its sliding windows: it needs SLIDE KAFKA",
                span=clause.span,
                hint="use CONSISTENT or GENEROUS here",
            )
        if attr.is_row_num:
            raise WQLSemanticError(
                "row_num arrives in order by definition: SLACK has nothing to bound", span=clause.span
            )
        amount = to_base(clause.quantity, attr.domain, attr.name, "SLACK", allow_negative=True)
        if amount < 0:
            raise WQLTypeError("SLACK must not be negative", span=clause.quantity.span)
        if clause.mode is None:
            self.notes.append("SLACK … CONSISTENT (no mode given)")
        return Slack(amount, clause.mode or "consistent")

    def slack_unit(self) -> ast.Unit | None:
        clause = self.get(ast.SlackClause)
        return clause.quantity.unit if isinstance(clause, ast.SlackClause) else None

    def reject_align(self, why: str) -> None:
        clause = self.get(ast.AlignClause)
        if clause is not None:
            raise WQLSemanticError(f"ALIGN does not apply: {why}", span=clause.span)


def decimal_scale(type_name: str) -> int:
    """The scale of DECIMAL(p, s); Spark's bare DECIMAL is DECIMAL(10, 0)."""
    inside = type_name.partition("(")[2].rstrip(")")
    parts = [p.strip() for p in inside.split(",")] if inside else []
    return int(parts[1]) if len(parts) == 2 else 0


def scaled(attr: Attribute, end: Attribute, values: tuple[Number | None, ...]) -> tuple[Attribute, Attribute]:
    """DECIMAL interval attributes share one scale: the finest of their columns and of the spec's numbers.

    Generated code then compares scaled integers (value · 10^scale), exactly, as for BIGINT attributes.
    """
    if attr.domain is not Domain.DECIMAL:
        return attr, end
    scale = max(attr.scale, end.scale)
    for value in values:
        if isinstance(value, Decimal):
            exponent = value.normalize().as_tuple().exponent
            if isinstance(exponent, int):
                scale = max(scale, -exponent)
    return replace(attr, scale=scale), replace(end, scale=scale)
