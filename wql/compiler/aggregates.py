"""Aggregate functions: their kind and family (docs/language.md §6, docs/semantics.md §6).

The kind (`PartialState`) says what a partial state must hold: distributive (a value of the same
type), algebraic (a fixed-size tuple), holistic (the multiset, or a sketch). The family
(`Duplicates`) says whether a value counted twice changes the result: cumulative (count, sum) versus
selective (min, max). Plans read both: panes and slices share partial states only for distributive
and algebraic aggregates. (The docs and explain call them kind and family; the code names them for
what they say, as it keeps "kind" for window kinds and "family" for plan families.)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import resources

from sqlglot import exp


class PartialState(Enum):
    DISTRIBUTIVE = "distributive"
    ALGEBRAIC = "algebraic"
    HOLISTIC = "holistic"


class Duplicates(Enum):
    CUMULATIVE = "cumulative"
    SELECTIVE = "selective"


@dataclass(frozen=True)
class AggregateInfo:
    name: str
    partial_state: PartialState
    duplicates: Duplicates
    numeric: bool = False  # its value argument must be a number
    approximate: bool = False

    def describe(self) -> str:
        text = f"{self.partial_state.value}, {self.duplicates.value}"
        return text + ", approximate" if self.approximate else text


D, A, H = PartialState.DISTRIBUTIVE, PartialState.ALGEBRAIC, PartialState.HOLISTIC
C, S = Duplicates.CUMULATIVE, Duplicates.SELECTIVE

_TABLE = [
    AggregateInfo("count", D, C),
    AggregateInfo("count_if", D, C),
    AggregateInfo("sum", D, C, numeric=True),
    AggregateInfo("try_sum", D, C, numeric=True),
    AggregateInfo("min", D, S),
    AggregateInfo("max", D, S),
    AggregateInfo("bool_and", D, S),
    AggregateInfo("bool_or", D, S),
    AggregateInfo("bit_and", D, S),
    AggregateInfo("bit_or", D, S),
    AggregateInfo("bit_xor", D, C),
    AggregateInfo("avg", A, C, numeric=True),
    AggregateInfo("try_avg", A, C, numeric=True),
    AggregateInfo("stddev", A, C, numeric=True),
    AggregateInfo("stddev_samp", A, C, numeric=True),
    AggregateInfo("stddev_pop", A, C, numeric=True),
    AggregateInfo("variance", A, C, numeric=True),
    AggregateInfo("var_pop", A, C, numeric=True),
    AggregateInfo("skewness", A, C, numeric=True),
    AggregateInfo("kurtosis", A, C, numeric=True),
    AggregateInfo("corr", A, C, numeric=True),
    AggregateInfo("covar_pop", A, C, numeric=True),
    AggregateInfo("covar_samp", A, C, numeric=True),
    AggregateInfo("min_by", A, S),
    AggregateInfo("max_by", A, S),
    AggregateInfo("median", H, C, numeric=True),
    AggregateInfo("percentile", H, C, numeric=True),
    AggregateInfo("percentile_cont", H, C, numeric=True),
    AggregateInfo("percentile_disc", H, C, numeric=True),
    AggregateInfo("percentile_approx", H, C, numeric=True, approximate=True),
    AggregateInfo("count_distinct", H, C),
    AggregateInfo("approx_count_distinct", H, C, approximate=True),
    AggregateInfo("collect_list", H, C),
    AggregateInfo("collect_set", H, C),
    AggregateInfo("listagg", H, C),
    AggregateInfo("mode", H, C),
    AggregateInfo("histogram_numeric", H, C, numeric=True, approximate=True),
]
AGGREGATES: dict[str, AggregateInfo] = {info.name: info for info in _TABLE}

# Other spellings Spark accepts for the same aggregate.
ALIASES = {
    "mean": "avg",
    "std": "stddev",
    "var_samp": "variance",
    "every": "bool_and",
    "some": "bool_or",
    "any": "bool_or",
    "array_agg": "collect_list",
    "approx_percentile": "percentile_approx",
    "string_agg": "listagg",
}

# Aggregates with no meaning over a window extent, which is a set of tuples.
REJECTED = {
    "first": "a window extent is a set, so 'first' depends on arrival order; use min_by(value, ts)",
    "first_value": "a window extent is a set, so 'first_value' depends on arrival order; use min_by(value, ts)",
    "last": "a window extent is a set, so 'last' depends on arrival order; use max_by(value, ts)",
    "last_value": "a window extent is a set, so 'last_value' depends on arrival order; use max_by(value, ts)",
    "any_value": "'any_value' picks an arbitrary row, so its result is not defined; use min or max",
}

# sqlglot's node classes for aggregates, by the name WQL uses.
_BY_CLASS: dict[type[exp.Expression], str] = {
    exp.Count: "count",
    exp.CountIf: "count_if",
    exp.Sum: "sum",
    exp.Min: "min",
    exp.Max: "max",
    exp.LogicalAnd: "bool_and",
    exp.LogicalOr: "bool_or",
    exp.Avg: "avg",
    exp.Stddev: "stddev",
    exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.Variance: "variance",
    exp.VariancePop: "var_pop",
    exp.Skewness: "skewness",
    exp.Kurtosis: "kurtosis",
    exp.Corr: "corr",
    exp.CovarPop: "covar_pop",
    exp.CovarSamp: "covar_samp",
    exp.ArgMin: "min_by",
    exp.ArgMax: "max_by",
    exp.Median: "median",
    exp.Quantile: "percentile",
    exp.PercentileCont: "percentile_cont",
    exp.PercentileDisc: "percentile_disc",
    exp.ApproxQuantile: "percentile_approx",
    exp.ApproxDistinct: "approx_count_distinct",
    exp.ArrayAgg: "collect_list",
    exp.ArrayUniqueAgg: "collect_set",
    exp.GroupConcat: "listagg",
    exp.Mode: "mode",
    exp.First: "first",
    exp.Last: "last",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
    exp.AnyValue: "any_value",
    exp.Any: "bool_or",
}
for _name in ("BitwiseAndAgg", "BitwiseOrAgg", "BitwiseXorAgg"):
    if hasattr(exp, _name):
        _BY_CLASS[getattr(exp, _name)] = {"BitwiseAndAgg": "bit_and", "BitwiseOrAgg": "bit_or"}.get(_name, "bit_xor")


@cache
def spark_functions() -> frozenset[str]:
    """Spark 4's built-in function names (SHOW FUNCTIONS), shipped so checks need no Spark."""
    text = resources.files("wql.compiler").joinpath("spark_functions.txt").read_text(encoding="utf-8")
    return frozenset(line.strip().lower() for line in text.splitlines() if line.strip())


@cache
def spark_aggregates() -> frozenset[str]:
    """Every Spark aggregate WQL knows of, under its Spark spellings."""
    return (
        frozenset(AGGREGATES)
        | frozenset(ALIASES)
        | frozenset(REJECTED) - {"count_distinct"}
        | {
            "regr_avgx",
            "regr_avgy",
            "regr_count",
            "regr_intercept",
            "regr_r2",
            "regr_slope",
            "regr_sxx",
            "regr_sxy",
            "regr_syy",
            "hll_sketch_agg",
            "hll_union_agg",
            "theta_sketch_agg",
            "theta_union_agg",
            "count_min_sketch",
            "collect_union",
            "approx_top_k",
            "measure",
        }
    )


def unwrap(node: exp.Expression) -> tuple[exp.Expression, exp.Expression | None]:
    """An aggregate call without its FILTER (WHERE …), and the filter's condition."""
    if isinstance(node, exp.Filter) and isinstance(node.expression, exp.Where):
        return node.this, node.expression.this
    return node, None


def aggregate_name(node: exp.Expression) -> str | None:
    """The WQL name of an aggregate call node, or None if the node is not an aggregate."""
    node, _ = unwrap(node)
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct):
        return "count_distinct"
    name = _BY_CLASS.get(type(node))
    if name is not None:
        return name
    if isinstance(node, exp.Anonymous):
        lowered = str(node.name).lower()
        if lowered in spark_aggregates():
            return ALIASES.get(lowered, lowered)
        return None
    if isinstance(node, exp.AggFunc):
        return node.sql_name().lower()  # regr_slope, as Spark spells it (the class is RegrSlope)
    return None


def aggregate_info(name: str) -> AggregateInfo:
    """Kind and family; aggregates outside the table are treated as holistic, the safe default."""
    return AGGREGATES.get(name) or AggregateInfo(name, H, C)
