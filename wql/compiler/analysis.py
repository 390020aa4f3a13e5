"""Semantic analysis: from a parsed SELECT to a checked, resolved `Query`.

Names resolve against the stream's schema (case-insensitively, as in Spark),
the window spec is resolved with its defaults, aggregates are pulled out of the
select list, HAVING and ORDER BY, and every non-aggregated column is checked to
be a group key or partition attribute. Everything after this stage works on
resolved SQL text, never on user spellings.

Result columns are named by their alias; unaliased items get predictable names
(docs/language.md §7): a column keeps its name, an aggregate is named
function_columns (max(speed) -> max_speed, count(*) -> count,
count(DISTINCT seg_id) -> count_distinct_seg_id), and a clash adds _2, _3, ….
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from sqlglot import exp

from wql.compiler.aggregates import (
    REJECTED,
    AggregateInfo,
    aggregate_info,
    aggregate_name,
    spark_functions,
    unwrap,
)
from wql.compiler.classify import Classification, classify
from wql.compiler.kinds import kind_of, resolve_window
from wql.compiler.schema import ROW_NUM, WINDOW_COLUMNS, Catalog, Stream
from wql.compiler.windows import Window
from wql.grammar import ast
from wql.grammar.errors import (
    Span,
    WQLNameError,
    WQLNotSupportedError,
    WQLSemanticError,
    WQLTypeError,
    did_you_mean,
)
from wql.grammar.expressions import parse_sql_expression, render_sql
from wql.grammar.formatter import format_select


@dataclass(frozen=True)
class AggregateCall:
    name: str  # the column it is computed into
    function: str  # WQL name, e.g. "max", "count_distinct"
    info: AggregateInfo
    sql: str  # the resolved call, over input columns
    args: tuple[str, ...]  # resolved argument SQL; () for count(*)
    star: bool = False
    filter: str | None = None  # FILTER (WHERE …) condition, resolved


@dataclass(frozen=True)
class Key:
    name: str  # result column name
    sql: str  # over input columns
    origin: Literal["partition", "group"]
    column: str | None = None  # the input column, when the key is one


@dataclass(frozen=True)
class Output:
    name: str
    sql: str  # over key and aggregate column names


@dataclass(frozen=True)
class OrderKey:
    sql: str  # over result, key and aggregate column names
    descending: bool = False
    nulls: Literal["first", "last"] | None = None


@dataclass(frozen=True)
class Query:
    """A checked window query, ready for planning."""

    text: str
    stream: Stream
    window: Window
    classification: Classification
    where: str | None
    keys: tuple[Key, ...]
    aggregates: tuple[AggregateCall, ...]
    outputs: tuple[Output, ...]
    having: str | None = None
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    emit_empty: bool = False
    emit: Literal["final", "changes"] = "final"  # on a stream; a batch run emits each window once either way
    input_columns: tuple[str, ...] = ()
    select: ast.Select | None = field(default=None, compare=False, repr=False)

    @property
    def columns(self) -> tuple[str, ...]:
        """The result's columns, in order."""
        return (*WINDOW_COLUMNS, *(k.name for k in self.keys), *(o.name for o in self.outputs))

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)


def analyze(select: ast.Select, catalog: Catalog) -> Query:
    """Resolve and check one SELECT against the streams in `catalog`."""
    stream = catalog.require(select.stream)
    window = resolve_window(select.window, stream, at=select.stream.span)
    return _Analyzer(select, stream, window).run()


def quote(name: str) -> str:
    """A column reference in Spark SQL, backquoted only where needed."""
    return render_sql(exp.column(exp.to_identifier(name)))


def expression_type(stream: Stream, sql: str) -> str | None:
    """The Spark type of an expression over the stream's columns, as sqlglot infers it; None where sqlglot
    cannot say (a function it does not know), which each caller states: a positioned error where the type
    is required (FRAME DELTA's number), a plan refused with the reason where a plan needs it (partial
    states), no check where one was only a courtesy (FRAME THRESHOLD's BOOLEAN). Any other failure is a
    fault of WQL's and is raised, never taken for an unknown type (it would silently refuse a plan)."""
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.qualify import qualify

    schema = {"s": {c.name: c.type for c in stream.columns}}
    select = exp.select(parse_sql_expression(sql)).from_(exp.to_table("s"))
    try:
        annotated = annotate_types(qualify(select, schema=schema, dialect="spark"), schema=schema, dialect="spark")
    except SqlglotError:  # sqlglot cannot type it: the type is unknown
        return None
    data_type = annotated.selects[0].type
    if data_type is None or data_type.this == exp.DataType.Type.UNKNOWN:
        return None
    return data_type.sql(dialect="spark").split("(")[0].upper()


# ------------------------------------------------------------------ positions


def node_span(node: exp.Expression, base: ast.Expr) -> Span:
    """The span of a node inside an expression, from sqlglot's token positions.

    Tokens give the node's first and last names; the span then grows to take in
    a call's argument list and any parentheses the node opened but did not close.
    """
    metas = [n.meta for n in node.walk() if isinstance(n, exp.Expression) and n.meta.get("start") is not None]
    if not metas or not base.text:
        return base.span
    text = base.text
    start = min(int(m["start"]) for m in metas)
    end = max(int(m["end"]) for m in metas) + 1
    if isinstance(node, exp.Subquery | exp.Select):
        opening = re.search(r"\(\s*select\s+(distinct\s+)?$", text[:start], re.IGNORECASE)
        if opening:
            start = opening.start()
    if isinstance(node, exp.Func) and not isinstance(node, exp.Column):
        after = len(text[end:]) - len(text[end:].lstrip())
        if text[end + after : end + after + 1] == "(":
            end += after
    return _inner_span(base, start, _balanced_end(text, start, end))


def _balanced_end(text: str, start: int, end: int) -> int:
    """Extend `end` until every parenthesis opened in text[start:end] is closed."""
    depth = 0
    i = start
    while i < len(text) and (i < end or depth > 0):
        ch = text[i]
        if ch in "'\"`":
            close = text.find(ch, i + 1)
            i = (close if close > 0 else len(text) - 1) + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0 and i >= end:
                break
            depth = max(0, depth - 1)
        i += 1
    return max(end, i)


def _inner_span(base: ast.Expr, start: int, end: int) -> Span:
    text = base.text
    start = max(0, min(start, len(text)))
    end = max(start + 1, min(end, len(text)))

    def position(offset: int) -> tuple[int, int]:
        lines = text.count("\n", 0, offset)
        if lines == 0:
            return base.span.line, base.span.column + offset
        return base.span.line + lines, offset - text.rfind("\n", 0, offset)

    line, column = position(start)
    end_line, end_column = position(end)
    return Span(base.span.start + start, base.span.start + end, line, column, end_line, end_column)


# ------------------------------------------------------------------ the analyzer

_SANITIZE = re.compile(r"[^0-9a-zA-Z_]+")


def _clean(text: str) -> str:
    return _SANITIZE.sub("_", text).strip("_").lower() or "expr"


class _Analyzer:
    def __init__(self, select: ast.Select, stream: Stream, window: Window) -> None:
        self.select = select
        self.stream = stream
        self.window = window
        self.aggregates: list[AggregateCall] = []
        self.inputs: list[str] = []
        self.names: set[str] = set(WINDOW_COLUMNS)
        self.aliases: dict[str, ast.Name] = {}
        self.clash: str | None = None  # a key named like another item's alias, reported last
        for item in select.items:
            if item.alias is None:
                continue
            if item.alias.key in WINDOW_COLUMNS:
                raise WQLSemanticError(f"'{item.alias.text}' is a WQL result column", span=item.alias.span)
            if item.alias.key in self.aliases:
                raise WQLSemanticError(f"two result columns are named '{item.alias.text}'", span=item.alias.span)
            self.aliases[item.alias.key] = item.alias

    # names -----------------------------------------------------------------
    def claim(self, wanted: str, *, alias: bool = False) -> str:
        """A unique column name. User aliases are reserved up front, so generated names avoid them."""
        if alias:
            if wanted.lower() in self.names:
                raise WQLSemanticError(
                    f"the result already has a column '{wanted}'", span=self.aliases[wanted.lower()].span
                )
            self.names.add(wanted.lower())
            return wanted
        name, n = wanted, 1
        while name.lower() in self.names or name.lower() in self.aliases:
            n += 1
            name = f"{wanted}_{n}"
        self.names.add(name.lower())
        return name

    def use_input(self, column: str) -> None:
        if column not in self.inputs:
            self.inputs.append(column)

    # resolution of one expression --------------------------------------------
    def resolve(
        self,
        expr: ast.Expr,
        context: str,
        *,
        allow_aggregates: bool,
        allow_window_columns: bool,
        aliases: frozenset[str] = frozenset(),
    ) -> exp.Expression:
        """Check functions and names in an expression; return a copy with columns in canonical case."""
        tree = expr.tree.copy()
        for node in list(tree.walk()):
            if isinstance(node, exp.Expression):
                self._check_node(node, expr, context, allow_aggregates)
        return tree.transform(lambda n: self._resolve_column(n, expr, context, allow_window_columns, aliases))

    def _check_node(self, node: exp.Expression, expr: ast.Expr, context: str, allow_aggregates: bool) -> None:
        if isinstance(node, exp.Window):
            raise WQLSemanticError(
                f"OVER windows are not allowed in {context}",
                span=node_span(node, expr),
                hint="a WQL query's window goes in the brackets after the stream name",
            )
        if isinstance(node, exp.Subquery | exp.Select) or (
            isinstance(node, exp.Exists) and isinstance(node.this, exp.Subquery | exp.Select)
        ):
            raise WQLNotSupportedError(f"subqueries in {context}", span=node_span(node, expr))
        if isinstance(node, exp.Anonymous):
            name = str(node.name).lower()
            if name not in spark_functions():
                raise WQLNameError(
                    f"unknown function '{node.name}'",
                    span=node_span(node, expr),
                    hint=did_you_mean(name, spark_functions()),
                )
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            raise WQLSemanticError(
                f"'*' is not allowed in {context}",
                span=node_span(node, expr),
                hint="name the columns and aggregates to compute per window",
            )
        function = aggregate_name(node)
        if function is None or (isinstance(node.parent, exp.Filter) and node.parent.this is node):
            return
        if function in REJECTED:
            raise WQLSemanticError(
                f"{function}() has no meaning over a window", span=node_span(node, expr), hint=REJECTED[function]
            )
        if not allow_aggregates:
            raise WQLSemanticError(
                f"aggregates are not allowed in {context}",
                span=node_span(node, expr),
                hint="filter windows on aggregates with HAVING" if context == "WHERE" else None,
            )
        own, _ = unwrap(node)
        inner = next((n for n in node.walk() if n is not node and n is not own and aggregate_name(n) is not None), None)
        if inner is not None:
            raise WQLSemanticError("aggregates cannot be nested", span=node_span(inner, expr))

    def _resolve_column(
        self,
        node: exp.Expression,
        expr: ast.Expr,
        context: str,
        allow_window: bool,
        aliases: frozenset[str],
    ) -> exp.Expression:
        if not isinstance(node, exp.Column):
            return node
        name = str(node.name)
        table = str(node.table) if node.table else ""
        span = node_span(node, expr)
        if table and table.lower() != self.stream.name.lower():
            raise WQLNameError(
                f"unknown stream '{table}' in '{render_sql(node)}'",
                span=span,
                hint=f"the query reads stream '{self.stream.name}'",
            )
        column = self.stream.column(name)
        if column is None and name.lower() in aliases and not table:
            return node
        if column is None and name.lower() in WINDOW_COLUMNS:
            if not allow_window:
                raise WQLSemanticError(f"'{name}' is known only after windowing, not in {context}", span=span)
            return exp.column(name.lower())
        if column is None:
            if name.lower() == ROW_NUM:
                raise WQLNotSupportedError(
                    "row_num in expressions",
                    span=span,
                    hint="row_num is available as a window attribute (WATTR row_num, SATTR row_num)",
                )
            raise WQLNameError(
                f"unknown column '{name}' in stream '{self.stream.name}'",
                span=span,
                hint=did_you_mean(name, [*self.stream.column_names, *aliases])
                or f"columns are: {', '.join(self.stream.column_names)}",
            )
        self.use_input(column.name)
        resolved = exp.column(exp.to_identifier(column.name))
        if isinstance(node.this, exp.Expression):
            resolved.this.meta.update(node.this.meta)  # keep positions for later error carets
        return resolved

    # aggregates -----------------------------------------------------------------
    def aggregate(self, node: exp.Expression, expr: ast.Expr, wanted: str | None = None) -> AggregateCall:
        """Register an aggregate call, once per distinct SQL."""
        sql = render_sql(node)
        for known in self.aggregates:
            if known.sql == sql:
                return known
        function = aggregate_name(node)
        assert function is not None
        info = aggregate_info(function)
        call_node, condition = unwrap(node)
        star = isinstance(call_node, exp.Count) and isinstance(call_node.this, exp.Star)
        args = _arguments(call_node)
        if info.numeric and args:
            self._check_numeric(call_node, expr, function)
        name = self.claim(wanted, alias=True) if wanted else self.claim(self.auto_name(call_node))
        call = AggregateCall(
            name=name,
            function=function,
            info=info,
            sql=sql,
            args=args,
            star=star,
            filter=render_sql(condition) if condition is not None else None,
        )
        self.aggregates.append(call)
        return call

    def _check_numeric(self, node: exp.Expression, expr: ast.Expr, function: str) -> None:
        first = next(iter(node.iter_expressions()), None)
        if isinstance(first, exp.Distinct) and first.expressions:
            first = first.expressions[0]
        if isinstance(first, exp.Column):
            column = self.stream.column(str(first.name))
            if column is not None and not column.is_numeric:
                raise WQLTypeError(
                    f"{function}() needs a number, and '{column.name}' is {column.type}",
                    span=node_span(node, expr),
                    hint="count, min and max work on any type",
                )

    def auto_name(self, node: exp.Expression) -> str:
        """Predictable names for unaliased items: max(speed) -> max_speed, count(*) -> count."""
        if isinstance(node, exp.Column):
            return str(node.name)
        function = aggregate_name(node)
        if function is None and isinstance(node, exp.Anonymous):
            function = str(node.name)
        elif function is None and isinstance(node, exp.Func):
            function = node.sql_name()
        if function is None:
            return "expr"
        columns: list[str] = []
        for column in node.find_all(exp.Column):
            if str(column.name) not in columns:
                columns.append(str(column.name))
        return _clean("_".join([function, *columns]))

    # post-aggregation rewriting -------------------------------------------------------
    def rewrite(self, tree: exp.Expression, expr: ast.Expr, keys: list[Key], context: str) -> exp.Expression:
        """Replace aggregates and key expressions by their columns; reject other bare columns."""
        key_by_sql = {k.sql: k for k in keys}
        aliases = {o.lower(): o for o in self.output_names}

        def replace_node(node: exp.Expression) -> exp.Expression:
            sql = render_sql(node)
            if sql in key_by_sql:
                return exp.column(exp.to_identifier(key_by_sql[sql].name))
            if aggregate_name(node) is not None:
                return exp.column(exp.to_identifier(self.aggregate(node, expr).name))
            return node

        rewritten = _transform_outer_first(tree, replace_node)
        known = {k.name for k in keys} | {a.name for a in self.aggregates} | set(WINDOW_COLUMNS)
        aliases.update({k.name.lower(): k.name for k in keys})
        for column in list(rewritten.find_all(exp.Column)):
            name = str(column.name)
            if name in known:
                continue
            if name.lower() in aliases:
                spelled = exp.column(exp.to_identifier(aliases[name.lower()]))
                if column is rewritten:
                    return spelled
                column.replace(spelled)
                continue
            raise WQLSemanticError(
                f"column '{name}' in {context} is neither aggregated nor a group key",
                span=self._column_span(expr, name),
                hint=f"aggregate it (e.g. max({name})), add GROUP BY {name}, or partition with PATTR {name}",
            )
        return rewritten

    def _column_span(self, expr: ast.Expr, name: str) -> Span:
        """Where a bare (non-aggregated) use of a column is."""
        for node in expr.tree.find_all(exp.Column):
            inside = any(aggregate_name(a) is not None for a in _ancestors(node))
            if str(node.name).lower() == name.lower() and not inside:
                return node_span(node, expr)
        return expr.span

    # sessions and frames: the expressions inside the window spec ------------------------------
    def spec_expressions(self) -> None:
        """A frame's predicate, x or condition, resolved against the stream by its kind; the window gets their
        SQL."""
        window = self.window
        if window.rule is not None and window.rule.source is not None:
            self.window = kind_of(window).resolve_expressions(window, _SpecExpressions(self))

    # the query --------------------------------------------------------------------------
    def run(self) -> Query:
        select = self.select
        self.spec_expressions()
        where = None
        if select.where is not None:
            tree = self.resolve(select.where, "WHERE", allow_aggregates=False, allow_window_columns=False)
            where = render_sql(tree)

        keys = self.partition_keys()
        items = [
            (item, self.resolve(item.expr, "the select list", allow_aggregates=True, allow_window_columns=True))
            for item in select.items
        ]
        keys.extend(self.group_keys(items, keys))
        if select.emit_empty and select.emit == "changes":
            raise WQLNotSupportedError(
                "EMIT CHANGES with EMPTY: an empty window has no change to report",
                span=select.span,
                hint="use EMIT FINAL EMPTY",
            )
        if select.emit_empty and not self.window.is_grid:
            raise WQLSemanticError(
                "EMIT EMPTY applies to grid windows; these windows exist only where tuples are",
                span=select.span,
            )

        self.output_names: list[str] = []
        outputs = [o for o in (self.output(item, tree, keys) for item, tree in items) if o is not None]
        alias_set = frozenset(name.lower() for name in [*self.output_names, *(k.name for k in keys)])

        having = None
        if select.having is not None:
            tree = self.resolve(
                select.having, "HAVING", allow_aggregates=True, allow_window_columns=True, aliases=alias_set
            )
            having = render_sql(self.rewrite(tree, select.having, keys, "HAVING"))
        order = tuple(self.order_key(item, keys, outputs, alias_set) for item in select.order_by)
        if self.clash is not None:
            self._clash(self.clash)
        return Query(
            text=format_select(select),
            stream=self.stream,
            window=self.window,
            classification=classify(self.window),
            where=where,
            keys=tuple(keys),
            aggregates=tuple(self.aggregates),
            outputs=tuple(outputs),
            having=having,
            order_by=order,
            limit=select.limit,
            emit_empty=select.emit_empty,
            emit=select.emit or "final",
            input_columns=self._input_order(keys),
            select=select,
        )

    def output(self, item: ast.SelectItem, tree: exp.Expression, keys: list[Key]) -> Output | None:
        """The result column of one select item, or None when the item is a key or window column."""
        sql = render_sql(tree)
        alias = item.alias.text if item.alias else None
        key = next((k for k in keys if k.sql == sql), None)
        if key is not None:
            if alias is not None and alias != key.name:
                keys[keys.index(key)] = replace(key, name=self.claim(alias, alias=True))
            return None
        if isinstance(tree, exp.Column) and str(tree.name).lower() in WINDOW_COLUMNS and alias is None:
            return None
        if aggregate_name(tree) is not None:
            existing = next((a for a in self.aggregates if a.sql == sql), None)
            if existing is None:
                call = self.aggregate(tree, item.expr, wanted=alias)
                self.output_names.append(call.name)
                return Output(call.name, quote(call.name))
            # The same aggregate again: a result column that reads the one computed column.
            if alias is None and existing.name.lower() not in self.output_names_lower():
                name = existing.name
            else:
                name = self.claim(alias, alias=True) if alias else self.claim(existing.name)
            self.output_names.append(name)
            return Output(name, quote(existing.name))
        rewritten = self.rewrite(tree, item.expr, keys, "the select list")
        name = self.claim(alias, alias=True) if alias else self.claim(self.auto_name(tree))
        self.output_names.append(name)
        return Output(name, render_sql(rewritten))

    def output_names_lower(self) -> set[str]:
        return {name.lower() for name in self.output_names}

    def _input_order(self, keys: list[Key]) -> tuple[str, ...]:
        """Columns the plan reads, in schema order."""
        wanted = set(self.inputs)
        for attr in (self.window.attr, self.window.end_attr):
            if attr is not None and not attr.is_row_num:
                wanted.add(attr.name)
        if self.window.attr.is_row_num and self.stream.row_num:
            wanted.add(self.stream.row_num)
        wanted.update(k.column for k in keys if k.column)
        return tuple(c.name for c in self.stream.columns if c.name in wanted)

    def _alias_elsewhere(self, column: str) -> bool:
        """Whether some select item other than the bare column itself is aliased `column`."""
        for item in self.select.items:
            if item.alias is not None and item.alias.key == column.lower():
                tree = item.expr.tree
                return not (isinstance(tree, exp.Column) and str(tree.name).lower() == column.lower())
        return False

    def _clash(self, name: str) -> None:
        alias = self.aliases[name.lower()]
        raise WQLSemanticError(
            f"two result columns would be named '{name}': a key and this alias",
            span=alias.span,
            hint="rename the alias",
        )

    def partition_keys(self) -> list[Key]:
        keys = []
        for name in self.window.partition_by:
            if self._alias_elsewhere(name):
                self.clash = self.clash or name
            self.use_input(name)
            keys.append(Key(name=self.claim(name), sql=quote(name), origin="partition", column=name))
        return keys

    def group_keys(self, items: list[tuple[ast.SelectItem, exp.Expression]], existing: list[Key]) -> list[Key]:
        keys: list[Key] = []
        seen = {k.sql for k in existing}
        by_alias = {item.alias.key: (item, tree) for item, tree in items if item.alias is not None}
        for expr in self.select.group_by:
            tree = expr.tree
            item: ast.SelectItem | None = None
            if isinstance(tree, exp.Literal) and tree.is_int:
                position = int(tree.this)
                if not 1 <= position <= len(items):
                    raise WQLSemanticError(
                        f"GROUP BY {position}: the select list has {len(items)} items", span=expr.span
                    )
                item, resolved = items[position - 1]
            elif (
                isinstance(tree, exp.Column)
                and not tree.table
                and str(tree.name).lower() in by_alias
                and self.stream.column(str(tree.name)) is None
            ):
                item, resolved = by_alias[str(tree.name).lower()]
            else:
                resolved = self.resolve(expr, "GROUP BY", allow_aggregates=False, allow_window_columns=False)
            if any(aggregate_name(n) is not None for n in resolved.walk() if isinstance(n, exp.Expression)):
                raise WQLSemanticError("GROUP BY cannot use an aggregate", span=expr.span)
            sql = render_sql(resolved)
            if sql in seen:
                continue
            seen.add(sql)
            column = str(resolved.name) if isinstance(resolved, exp.Column) else None
            alias = item.alias if item is not None else self._alias_for(sql, items)
            if alias is not None:
                name = self.claim(alias.text, alias=True)
            else:
                if column is not None and self._alias_elsewhere(column):
                    self.clash = self.clash or column
                name = self.claim(column or self.auto_name(resolved))
            keys.append(Key(name=name, sql=sql, origin="group", column=column))
        return keys

    @staticmethod
    def _alias_for(sql: str, items: list[tuple[ast.SelectItem, exp.Expression]]) -> ast.Name | None:
        for item, tree in items:
            if item.alias is not None and render_sql(tree) == sql:
                return item.alias
        return None

    def order_key(
        self, item: ast.OrderItem, keys: list[Key], outputs: list[Output], aliases: frozenset[str]
    ) -> OrderKey:
        tree = item.expr.tree
        if isinstance(tree, exp.Literal) and tree.is_int:
            position = int(tree.this)
            columns = [*WINDOW_COLUMNS, *(k.name for k in keys), *(o.name for o in outputs)]
            if not 1 <= position <= len(columns):
                raise WQLSemanticError(
                    f"ORDER BY {position}: the result has {len(columns)} columns", span=item.expr.span
                )
            return OrderKey(quote(columns[position - 1]), item.descending, item.nulls)
        resolved = self.resolve(
            item.expr, "ORDER BY", allow_aggregates=True, allow_window_columns=True, aliases=aliases
        )
        rewritten = self.rewrite(resolved, item.expr, keys, "ORDER BY")
        return OrderKey(render_sql(rewritten), item.descending, item.nulls)


def _ancestors(node: exp.Expression) -> list[exp.Expression]:
    found = []
    parent = node.parent
    while parent is not None:
        found.append(parent)
        parent = parent.parent
    return found


def _arguments(node: exp.Expression) -> tuple[str, ...]:
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return ()
    values: list[str] = []
    for arg in node.iter_expressions():
        if isinstance(arg, exp.Distinct):
            values.extend(render_sql(e) for e in arg.expressions)
        else:
            values.append(render_sql(arg))
    return tuple(values)


def _transform_outer_first(tree: exp.Expression, fn: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """Apply `fn` top-down, not descending into nodes it replaced (so aggregates stay whole)."""
    replaced = fn(tree)
    if replaced is not tree:
        return replaced
    for child in list(tree.iter_expressions()):
        new = _transform_outer_first(child, fn)
        if new is not child:
            child.replace(new)
    return tree


@dataclass(frozen=True)
class _SpecExpressions:
    """The analysis's name resolution, lent to a window's kind for the expressions inside its spec
    (`kinds.base.Expressions`): window columns and aggregates are not theirs to read, unless asked."""

    analyzer: _Analyzer

    def resolve(self, expr: ast.Expr, context: str, *, allow_aggregates: bool) -> exp.Expression:
        return self.analyzer.resolve(expr, context, allow_aggregates=allow_aggregates, allow_window_columns=False)

    def column(self, name: ast.Name) -> str:
        stream = self.analyzer.stream
        column = stream.column(name.text)
        if column is None:
            raise WQLNameError(
                f"unknown column '{name.text}' in stream '{stream.name}'",
                span=name.span,
                hint=did_you_mean(name.text, stream.column_names) or f"columns are: {', '.join(stream.column_names)}",
            )
        self.analyzer.use_input(column.name)
        return quote(column.name)

    def type_of(self, sql: str) -> str | None:
        return expression_type(self.analyzer.stream, sql)

    def span_of(self, node: exp.Expression, source: ast.Expr) -> Span:
        return node_span(node, source)
