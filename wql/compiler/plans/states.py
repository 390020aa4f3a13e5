"""How aggregates decompose into partial states that plans share between windows.

Pane, slice, bins and prefix plans pre-aggregate into partial states (lift),
combine states across cells or tuples (combine), and finish each aggregate from
its states (lower): count and sum are sums, min and max are extremes, avg,
stddev and variance are moments (count, mean, M2). Only aggregates with a
fixed-size state can do that; holistic ones go by bucket or over.
"""

from __future__ import annotations

from dataclasses import dataclass

from wql.compiler.aggregates import PartialState
from wql.compiler.algebra import OperationName
from wql.compiler.analysis import AggregateCall, Query, expression_type
from wql.compiler.schema import FLOATING_TYPES, INTEGRAL_TYPES

Operation = OperationName  # the state algebra's operations (wql.compiler.algebra): identity and combine


@dataclass(frozen=True)
class StateGroup:
    """Partial-state columns that combine together.

    `lifts` are cell-level Spark SQL aggregates (pane and slice plans);
    `contributions` are one tuple's share of each state as row-level Spark SQL
    (bins), where NULL means no contribution. `floating` marks the columns of
    DOUBLE shares: a NaN or an infinity among them must not be summed into a
    running total, or it would reach every later window (the prefix plan).
    """

    operation: Operation
    columns: tuple[str, ...]
    lifts: tuple[str, ...]
    contributions: tuple[str, ...] = ()
    floating: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Decomposition:
    groups: tuple[StateGroup, ...]  # the first counts rows (non-empty windows)
    lowers: tuple[tuple[str, str], ...]  # (aggregate column, Spark SQL over state columns)

    @property
    def columns(self) -> list[str]:
        """Every state column, group by group: the slots the kernels lay out."""
        return [c for g in self.groups for c in g.columns]

    @property
    def operations(self) -> list[str]:
        """Each state column's combine, beside `columns` (a moments group's three columns share one)."""
        return [g.operation for g in self.groups for _ in g.columns]

    @property
    def counted(self) -> set[str]:
        """The state columns a tuple adds one to (its share is ONE): row counts, which the kernels count
        rather than read."""
        return {c for g in self.groups for c, share in zip(g.columns, g.contributions, strict=True) if share == ONE}


# ------------------------------------------------------------------ aggregate decomposition

_INTEGRAL = INTEGRAL_TYPES
_FLOATING = FLOATING_TYPES


def _argument_type(query: Query, sql: str) -> str | None:
    """The Spark type of an aggregate argument, inferred from the stream's schema (None if unknown)."""
    return expression_type(query.stream, sql)


def decompose(query: Query, names: set[str]) -> Decomposition | None:
    """States for every aggregate of the query, or None if any aggregate has no fixed-size state."""
    builder = _Decomposer(query, names)
    for call in query.aggregates:
        if not builder.add(call):
            return None
    return builder.result()


ONE = "CAST(1 AS BIGINT)"


def _present(arg: str) -> str:
    """1 when a value is there to aggregate, else 0."""
    return f"CAST(CASE WHEN {arg} IS NULL THEN 0 ELSE 1 END AS BIGINT)"


def _clean(sql: str) -> str:
    import re

    return re.sub(r"[^0-9a-zA-Z]+", "_", sql).strip("_").lower()[:40] or "x"


def fresh_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted_2`, `wanted_3`, … : the first not in `taken` (lower case, as Spark compares names)."""
    name, n = wanted, 1
    while name.lower() in taken:
        n += 1
        name = f"{wanted}_{n}"
    taken.add(name.lower())
    return name


class _Decomposer:
    def __init__(self, query: Query, taken: set[str]) -> None:
        self.query = query
        self.taken = set(taken)
        self.groups: list[StateGroup] = []
        self.by_lift: dict[tuple[str, str], str] = {}
        self.lowers: list[tuple[str, str]] = []
        self.condition: str | None = None
        self.rows = self.state("sum", "COUNT(*)", "_rows", ONE)

    def column(self, wanted: str) -> str:
        return fresh_name(wanted, self.taken)

    def state(self, operation: Operation, lift: str, wanted: str, contribution: str, *, floating: bool = False) -> str:
        lift = self.filtered(lift)
        contribution = self.filtered_contribution(contribution, counts=lift.startswith("COUNT"))
        known = self.by_lift.get((operation, lift))
        if known is not None:
            return known
        name = self.column(wanted)
        self.by_lift[(operation, lift)] = name
        self.groups.append(StateGroup(operation, (name,), (lift,), (contribution,), (floating,)))
        return name

    def filtered_contribution(self, contribution: str, *, counts: bool) -> str:
        """A row's contribution under the aggregate's FILTER: zero for counts, NULL (none) otherwise."""
        if not self.condition:
            return contribution
        otherwise = " ELSE 0" if counts else ""
        return f"CASE WHEN {self.condition} THEN {contribution}{otherwise} END"

    def filtered(self, lift: str) -> str:
        """A lift restricted by the current aggregate's FILTER (WHERE …), if it has one."""
        return f"{lift} FILTER (WHERE {self.condition})" if self.condition else lift

    def add(self, call: AggregateCall) -> bool:
        self.condition = call.filter
        info = call.info
        if info.partial_state is PartialState.HOLISTIC or call.function in {"min_by", "max_by"}:
            return False
        base = "_" + _clean(call.args[0]) if call.args else f"_{call.name}"
        if call.star:
            rows = self.state("sum", "COUNT(*)", "_rows", ONE) if call.filter else self.rows
            self.lowers.append((call.name, rows))
            return True
        if len(call.args) != 1 and call.function not in {"count"}:
            return False
        arg = call.args[0] if call.args else "*"
        if call.function == "count":
            if len(call.args) != 1:
                return False
            self.lowers.append((call.name, self.state("sum", f"COUNT({arg})", f"_n{base}", _present(arg))))
            return True
        if call.function == "count_if":
            holds = f"CAST(CASE WHEN {arg} THEN 1 ELSE 0 END AS BIGINT)"
            self.lowers.append((call.name, self.state("sum", f"COUNT_IF({arg})", f"_count_if{base}", holds)))
            return True
        arg_type = _argument_type(self.query, arg)
        if arg_type is None:
            return False
        if call.function in {"stddev", "stddev_samp", "stddev_pop", "variance", "var_pop"}:
            return self._moments(call, arg, arg_type, base)
        count = self.state("sum", f"COUNT({arg})", f"_n{base}", _present(arg))
        if call.function in {"sum", "try_sum"}:
            if arg_type not in _INTEGRAL | _FLOATING:
                return False
            share = f"CAST({arg} AS BIGINT)" if arg_type in _INTEGRAL else arg
            total = self.state("sum", f"SUM({arg})", f"_sum{base}", share, floating=arg_type in _FLOATING)
            self.lowers.append((call.name, f"CASE WHEN {count} > 0 THEN {total} END"))
            return True
        if call.function in {"avg", "try_avg"}:
            if arg_type not in _INTEGRAL | _FLOATING:
                return False
            # A DOUBLE needs no cast, and then avg shares sum's state (a query often asks for both).
            value = arg if arg_type == "DOUBLE" else f"CAST({arg} AS DOUBLE)"
            total = self.state("sum", f"SUM({value})", f"_sum{base}", value, floating=True)
            self.lowers.append((call.name, f"CASE WHEN {count} > 0 THEN {total} / {count} END"))
            return True
        if call.function in {"min", "max", "bool_and", "bool_or"}:
            return self._extreme(call, arg, arg_type, count, base)
        return False

    def _moments(self, call: AggregateCall, arg: str, arg_type: str, base: str) -> bool:
        if arg_type not in _INTEGRAL | _FLOATING:
            return False
        value = f"CAST({arg} AS DOUBLE)"
        key = ("moments", self.filtered(value))
        if key not in self.by_lift:
            columns = (self.column(f"_n{base}"), self.column(f"_mean{base}"), self.column(f"_m2{base}"))
            lifts = tuple(self.filtered(lift) for lift in (f"COUNT({arg})", f"AVG({value})", f"VAR_POP({value})"))
            lifts = (lifts[0], lifts[1], f"{lifts[2]} * {lifts[0]}")
            shares = (
                self.filtered_contribution(_present(arg), counts=True),
                self.filtered_contribution(value, counts=False),
                # One value's spread, as Spark's VAR_POP of it: 0, but NaN for NaN and infinities (so
                # that any window holding one has a NaN variance, as in Spark), NULL for NULL.
                self.filtered_contribution(f"{value} - {value}", counts=False),
            )
            self.groups.append(StateGroup("moments", columns, lifts, shares, (False, True, True)))
            self.by_lift[key] = ",".join(columns)
        n, _, m2 = self.by_lift[key].split(",")
        m2 = f"GREATEST({m2}, 0D)"
        lowers = {
            "stddev": f"CASE WHEN {n} > 1 THEN SQRT({m2} / ({n} - 1)) END",
            "stddev_samp": f"CASE WHEN {n} > 1 THEN SQRT({m2} / ({n} - 1)) END",
            "stddev_pop": f"CASE WHEN {n} > 0 THEN SQRT({m2} / {n}) END",
            "variance": f"CASE WHEN {n} > 1 THEN {m2} / ({n} - 1) END",
            "var_pop": f"CASE WHEN {n} > 0 THEN {m2} / {n} END",
        }
        self.lowers.append((call.name, lowers[call.function]))
        return True

    def _extreme(self, call: AggregateCall, arg: str, arg_type: str, count: str, base: str) -> bool:
        operation: Operation = "min" if call.function in {"min", "bool_and"} else "max"
        if arg_type in _INTEGRAL or arg_type in _FLOATING:
            inner, back = arg, "{}"
        elif arg_type == "TIMESTAMP":
            inner, back = f"UNIX_MICROS({arg})", "TIMESTAMP_MICROS({})"
        elif arg_type == "DATE":
            inner, back = f"UNIX_DATE({arg})", "DATE_FROM_UNIX_DATE({})"
        elif arg_type == "BOOLEAN":
            inner, back = f"CAST({arg} AS INT)", "({} = 1)"
        else:
            return False
        value = self.state(operation, f"{operation.upper()}({inner})", f"_{operation}{base}", inner)
        self.lowers.append((call.name, f"CASE WHEN {count} > 0 THEN {back.format(value)} END"))
        return True

    def result(self) -> Decomposition:
        return Decomposition(tuple(self.groups), tuple(self.lowers))


def why_not_shared(query: Query) -> str:
    """Why cells cannot share partial states for this query's aggregates."""
    kinds = [(a, a.info.partial_state is PartialState.HOLISTIC) for a in query.aggregates]
    sketches = [a.sql for a, holistic in kinds if holistic and a.info.approximate]
    holistic = [a.sql for a, is_holistic in kinds if is_holistic and not a.info.approximate]
    by = [a.sql for a in query.aggregates if a.function in {"min_by", "max_by"}]
    if holistic:
        return (
            f"{', '.join(holistic)} need{'s' if len(holistic) == 1 else ''} whole multisets, which cells cannot share"
        )
    if sketches:
        return f"not supported yet: merging the sketches of {', '.join(sketches)} across cells"
    if by:
        return f"not supported yet: partial states for {', '.join(by)}"
    untyped = [
        a.sql
        for a in query.aggregates
        if len(a.args) == 1
        and not a.star
        and a.function not in {"count", "count_if"}
        and _argument_type(query, a.args[0]) is None
    ]
    if untyped:
        return (
            f"WQL cannot infer the type of {', '.join(untyped)}'s argument, so it knows no partial state for it: "
            "cast the argument (e.g. CAST(x AS DOUBLE))"
        )
    return "an aggregate's argument type (e.g. STRING or DECIMAL) has no partial state WQL can combine yet"


def state_names(query: Query) -> set[str]:
    """Names a decomposition must not give its state columns: the stream's, the aggregates' and the keys'."""
    taken = {c.name.lower() for c in query.stream.columns} | {a.name.lower() for a in query.aggregates}
    return taken | {k.name.lower() for k in query.keys}
