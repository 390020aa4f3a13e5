"""Text to syntax tree: lark (LALR, contextual lexer) plus sqlglot for expressions."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import Any

import lark
from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from wql.grammar import ast
from wql.grammar.errors import Span, WQLError, WQLSyntaxError, WQLTypeError, did_you_mean
from wql.grammar.expressions import parse_expression

# Spark type names WQL streams may declare, and the spellings that mean the same type.
TYPE_NAMES: dict[str, str] = {
    "STRING": "STRING",
    "VARCHAR": "STRING",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "LONG": "BIGINT",
    "SMALLINT": "SMALLINT",
    "TINYINT": "TINYINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT",
    "DECIMAL": "DECIMAL",
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "DATE": "DATE",
}

FORMATS = ("csv", "json", "parquet", "rate", "kafka")
FILE_FORMATS = ("csv", "json", "parquet")


# How lark builds WQL's parser. Building its LALR tables takes lark 1.5-2 s, at every start of a process;
# they are built once instead (`make grammar`) and shipped beside the grammar, in lark's own format
# (Lark.save), with the digest of what they were built from on the first line.
PARSER_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "propagate_positions": True,
    "maybe_placeholders": False,
}
TABLES = "wql.lark.pickle"


def grammar_text() -> str:
    return resources.files("wql.grammar").joinpath("wql.lark").read_text(encoding="utf-8")


def tables_digest(grammar: str) -> str:
    """What the shipped tables must have been built from: this grammar, these options, this lark."""
    return hashlib.sha256(f"{grammar}\n{sorted(PARSER_OPTIONS.items())}\nlark {lark.__version__}".encode()).hexdigest()


@cache
def _lark() -> Lark:
    """The parser from the shipped tables, when they were built from this grammar with this lark; else
    built from the grammar, with lark's own cache (a per-user file in the temp directory), so that only
    a process's first start after the grammar or lark changed builds it."""
    grammar = grammar_text()
    shipped = resources.files("wql.grammar").joinpath(TABLES)
    if shipped.is_file():
        with shipped.open("rb") as handle:
            if handle.readline().decode().strip() == tables_digest(grammar):
                return Lark.load(handle)
    return Lark(grammar, cache=True, **PARSER_OPTIONS)


def save_tables(path: str | None = None) -> str:
    """Build the parser from the grammar and write its tables where `_lark` reads them (`make grammar`)."""
    target = path or str(resources.files("wql.grammar").joinpath(TABLES))
    grammar = grammar_text()
    with open(target, "wb") as handle:
        handle.write(tables_digest(grammar).encode() + b"\n")
        Lark(grammar, **PARSER_OPTIONS).save(handle)
    return target


def parse(text: str, path: str | None = None) -> ast.Script:
    """Parse a whole script. Raises `WQLError` (with source attached) for any bad input."""
    try:
        tree = _lark().parse(text)
        script = _Builder(text).transform(tree)
    except VisitError as error:
        inner = error.orig_exc
        if isinstance(inner, WQLError):
            raise inner.with_source(text, path) from None
        raise WQLSyntaxError(f"cannot read the query: {inner}").with_source(text, path) from None
    except UnexpectedInput as error:
        raise _syntax_error(error, text).with_source(text, path) from None
    except LarkError as error:
        raise WQLSyntaxError(f"cannot read the query: {error}").with_source(text, path) from None
    except RecursionError:
        raise WQLSyntaxError("the query nests too deeply to read").with_source(text, path) from None
    assert isinstance(script, ast.Script)
    return script


def parse_statement(text: str, path: str | None = None) -> ast.Statement:
    """Parse text that must hold exactly one statement."""
    script = parse(text, path)
    if len(script.statements) != 1:
        raise WQLSyntaxError(
            f"expected one statement, found {len(script.statements)}",
            span=script.span,
        ).with_source(text, path)
    return script.statements[0]


# ------------------------------------------------------------------ lark errors

_READABLE = {
    "NAME": "a name",
    "QUOTED_NAME": "a `quoted name`",
    "STRING": "a string",
    "SIGNED_NUMBER": "a number",
    "UNIT": "a unit (ROWS, SECONDS, MINUTES, …, MONTHS, YEARS)",
    "OP": "an operator",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "DOT": "'.'",
    "STAR": "'*'",
    "EQUAL": "'='",
    "_SEMI": "';'",
    "$END": "end of input",
}

_CLAUSE_KEYWORDS = {
    "RANGE",
    "SLIDE",
    "WATTR",
    "RATTR",
    "SATTR",
    "PATTR",
    "ALIGN",
    "SLACK",
    "CUMULATE",
    "FULL",
    "OWN",
    "SESSION",
    "FRAME",
    "SNAPSHOT",
    "CLIP",
    "SNAP",
}
_RESERVED = {"SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT"}


def _readable(terminal: str) -> str:
    if terminal in _READABLE:
        return _READABLE[terminal]
    if terminal.startswith("__ANON"):
        return "a symbol"
    return terminal.lstrip("_").replace("_", " ")


def _expected_list(expected: set[str]) -> str:
    words = sorted({_readable(t) for t in expected if not t.startswith("__ANON")})
    if len(words) > 12:
        words = [*words[:12], "…"]
    return ", ".join(words)


def _syntax_error(error: UnexpectedInput, text: str) -> WQLSyntaxError:
    if isinstance(error, UnexpectedCharacters):
        start = error.pos_in_stream
        char = text[start] if start < len(text) else ""
        if char in "'\"":
            line_end = text.find("\n", start)
            line_end = len(text) if line_end < 0 else line_end
            return WQLSyntaxError(
                "unterminated string", span=Span.of_text(text, start, line_end), hint=f"close it with {char}"
            )
        if char == "`":
            return WQLSyntaxError("unterminated `quoted name`", span=Span.of_text(text, start, start + 1))
        word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[start:])
        if word:
            allowed = _expected_list(set(error.allowed or ()))
            return WQLSyntaxError(
                f"unexpected '{word.group()}'" + (f"; expected {allowed}" if allowed else ""),
                span=Span.of_text(text, start, start + len(word.group())),
                hint="a column named like a clause keyword needs backquotes, e.g. `from`"
                if word.group().upper() in _RESERVED
                else None,
            )
        return WQLSyntaxError(f"unexpected character {char!r}", span=Span.of_text(text, start, start + 1))
    if isinstance(error, UnexpectedEOF):
        end = _content_end(text)
        return WQLSyntaxError(
            f"unexpected end of input; expected {_expected_list(set(error.expected))}",
            span=Span.of_text(text, max(0, end - 1), max(end, 1)),
        )
    assert isinstance(error, UnexpectedToken)
    token = error.token
    expected = set(error.expected)
    if token.type == "$END":
        end = _content_end(text)
        return WQLSyntaxError(
            f"unexpected end of input; expected {_expected_list(expected)}",
            span=Span.of_text(text, max(0, end - 1), max(end, 1)),
            hint=_eof_hint(expected),
        )
    start = token.start_pos or 0
    span = Span.of_text(text, start, start + max(1, len(str(token))))
    word = str(token)
    hint = None
    if word.upper() in _CLAUSE_KEYWORDS and "_FROM" not in expected:
        hint = "window clauses go inside the brackets after the stream name: FROM s [RANGE … SLIDE …]"
    elif "_SEMI" in expected and word.upper() in {"SELECT", "CREATE", "EXPLAIN"}:
        hint = "end the previous statement with ';'"
    elif token.type == "UNIT":
        hint = "a unit follows a number, e.g. RANGE 5 MINUTES"
    elif "UNIT" in expected and "_RANGE" in expected and (unit_hint := did_you_mean(word, [u.name for u in ast.Unit])):
        hint = unit_hint
    elif "RPAR" in expected and token.type in {"_SEMI", "_FROM", "COMMA"}:
        hint = "a ')' is missing"
    elif "_ON" in expected and re.search(r"\bDELTA\s+[^\s\]]+(\s+[A-Za-z]+)?\s*$", text[:start], re.IGNORECASE):
        hint = "name the attribute the frame follows: FRAME DELTA d ON column (or ON (expression))"
    elif "_FROM" in expected and (typo := _earlier_typo(text[:start], "FROM")):
        hint = f"did you mean FROM instead of '{typo}'?"
    else:
        hint = _keyword_typo_hint(word, expected)
    return WQLSyntaxError(f"unexpected {word!r}; expected {_expected_list(expected)}", span=span, hint=hint)


def _earlier_typo(before: str, keyword: str) -> str | None:
    """A word before the error that looks like a misspelt `keyword` (FORM for FROM)."""
    for candidate in reversed(re.findall(r"[A-Za-z_]+", before)):
        if candidate.upper() != keyword and did_you_mean(candidate, [keyword]):
            return candidate
    return None


def _eof_hint(expected: set[str]) -> str | None:
    if "RPAR" in expected:
        return "a ')' is missing"
    if "RSQB" in expected:
        return "close the window spec with ']'"
    return None


_TRAILING = re.compile(r"(\s+|--[^\n]*|/\*.*?\*/)+\Z", re.DOTALL)


def _content_end(text: str) -> int:
    """Where the last token ends: trailing blanks and comments do not count."""
    match = _TRAILING.search(text)
    return match.start() if match else len(text)


def _keyword_typo_hint(word: str, expected: set[str]) -> str | None:
    keywords = [t.lstrip("_") for t in expected if t.lstrip("_").isalpha() and t.lstrip("_").isupper()]
    keywords = [k for k in keywords if k not in {"NAME", "STRING"}]
    return did_you_mean(word, keywords) if keywords else None


# ------------------------------------------------------------------ tree builder


def _unquote_name(token: Token) -> str:
    text = str(token)
    if token.type == "QUOTED_NAME":
        return text[1:-1].replace("``", "`")
    return text


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


def unquote_string(text: str) -> str:
    """WQL string literal to value: backslash escapes, or a doubled quote for a quote."""
    quote, body = text[0], text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if ch == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class _Builder(Transformer[Any, Any]):
    """Turns lark's tree into `wql.grammar.ast` nodes, keeping spans."""

    def __init__(self, text: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text

    # spans ------------------------------------------------------------
    def _span(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return ast.NO_SPAN
        return Span.of_text(self.text, meta.start_pos, meta.end_pos)

    def _token_span(self, token: Token) -> Span:
        start = token.start_pos or 0
        return Span.of_text(self.text, start, start + len(str(token)))

    def _number(self, token: Token) -> Decimal:
        try:
            return Decimal(str(token))
        except InvalidOperation:
            raise WQLSyntaxError(f"not a number: {token}", span=self._token_span(token)) from None

    def _integer(self, token: Token, what: str) -> int:
        value = self._number(token)
        if value.is_finite() and value.adjusted() > 18:
            raise WQLSyntaxError(f"{what} is too large: {token}", span=self._token_span(token))
        if value != value.to_integral_value() or value < 0:
            raise WQLSyntaxError(f"{what} must be a whole number ≥ 0, not {token}", span=self._token_span(token))
        return int(value)

    # script -----------------------------------------------------------
    @v_args(meta=True)
    def start(self, meta: Any, children: list[Any]) -> ast.Script:
        return ast.Script(statements=tuple(children), span=self._span(meta))

    @v_args(meta=True)
    def name(self, meta: Any, children: list[Token]) -> ast.Name:
        return ast.Name(text=_unquote_name(children[0]), span=self._span(meta))

    @v_args(meta=True)
    def expr(self, meta: Any, children: list[Any]) -> ast.Expr:
        span = self._span(meta)
        return parse_expression(self.text[span.start : span.end], span, self.text)

    # CREATE STREAM -------------------------------------------------------
    @v_args(meta=True)
    def type_name(self, meta: Any, children: list[Token]) -> ast.TypeName:
        word = str(children[0]).upper()
        span = self._span(meta)
        if word not in TYPE_NAMES:
            raise WQLTypeError(
                f"unknown type '{children[0]}'",
                span=self._token_span(children[0]),
                hint=did_you_mean(word, TYPE_NAMES) or f"use one of {', '.join(sorted(set(TYPE_NAMES.values())))}",
            )
        canonical = TYPE_NAMES[word]
        params = tuple(self._integer(t, "a type parameter") for t in children[1:])
        if params and canonical != "DECIMAL":
            raise WQLTypeError(f"type {canonical} takes no parameters", span=span)
        if canonical == "DECIMAL" and not params:
            params = (10, 0)
        return ast.TypeName(name=canonical, params=params, span=span)

    @v_args(meta=True)
    def column_def(self, meta: Any, children: list[Any]) -> ast.ColumnDef:
        return ast.ColumnDef(name=children[0], type=children[1], span=self._span(meta))

    @v_args(meta=True)
    def source_path(self, meta: Any, children: list[Token]) -> tuple[str, Any, Span]:
        return ("path", unquote_string(str(children[0])), self._span(meta))

    @v_args(meta=True)
    def source_table(self, meta: Any, children: list[ast.Name]) -> tuple[str, Any, Span]:
        return ("table", tuple(children), self._span(meta))

    @v_args(meta=True)
    def source_format(self, meta: Any, children: list[Token]) -> tuple[str, Any, Span]:
        word = str(children[0]).lower()
        if word not in FORMATS:
            raise WQLSyntaxError(
                f"unknown format '{children[0]}'",
                span=self._token_span(children[0]),
                hint=did_you_mean(word, FORMATS) or f"use one of {', '.join(FORMATS)}",
            )
        return ("format", word, self._span(meta))

    @v_args(meta=True)
    def option(self, meta: Any, children: list[Any]) -> ast.Option:
        key, value = children
        return ast.Option(key=key, value=value, span=self._span(meta))

    def option_key(self, children: list[Token]) -> str:
        if len(children) == 1 and children[0].type == "STRING":
            return unquote_string(str(children[0]))
        return ".".join(str(t) for t in children)

    def option_value(self, children: list[Token]) -> ast.OptionValue:
        token = children[0]
        if token.type == "STRING":
            return unquote_string(str(token))
        if token.type == "TRUE":
            return True
        if token.type == "FALSE":
            return False
        return self._number(token)

    @v_args(meta=True)
    def source_options(self, meta: Any, children: list[ast.Option]) -> tuple[str, Any, Span]:
        return ("options", tuple(children), self._span(meta))

    @v_args(meta=True)
    def row_num_attr(self, meta: Any, children: list[ast.Name]) -> tuple[str, Any, Span]:
        return ("row_num", children[0], self._span(meta))

    @v_args(meta=True)
    def punctuation(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("punctuation", children[0], self._span(meta))

    @v_args(meta=True)
    def create_stream(self, meta: Any, children: list[Any]) -> ast.CreateStream:
        name = children[0]
        columns = tuple(c for c in children[1:] if isinstance(c, ast.ColumnDef))
        fields: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        for option in children[1:]:
            if isinstance(option, tuple):
                key, value, span = option
                spans[key] = span
                if key in fields or (key in ("path", "table") and "path_span" in fields):
                    clause = {
                        "path": "FROM",
                        "table": "FROM",
                        "format": "FORMAT",
                        "options": "OPTIONS",
                        "row_num": "ROW_NUM",
                        "punctuation": "PUNCTUATION",
                    }[key]
                    raise WQLSyntaxError(f"{clause} is given twice", span=span)
                fields[key] = value
                if key in ("path", "table"):
                    fields["path_span"] = span
        if "table" in spans and "format" in spans:
            raise WQLSyntaxError(
                "FORMAT does not apply to FROM TABLE: Spark's catalog knows the table's format",
                span=spans["format"],
                hint="leave FORMAT out; OPTIONS still reach Spark's reader of the table",
            )
        return ast.CreateStream(name=name, columns=columns, span=self._span(meta), **fields)

    # window spec ----------------------------------------------------------
    @v_args(meta=True)
    def quantity(self, meta: Any, children: list[Any]) -> ast.Quantity:
        unit = children[1] if len(children) > 1 else None
        return ast.Quantity(value=self._number(children[0]), unit=unit, span=self._span(meta))

    def unit(self, children: list[Token]) -> ast.Unit:
        return ast.Unit.parse(str(children[0]))

    @v_args(meta=True)
    def range_clause(self, meta: Any, children: list[Any]) -> ast.RangeClause:
        quantity = children[0] if isinstance(children[0], ast.Quantity) else None
        return ast.RangeClause(quantity=quantity, span=self._span(meta))

    @v_args(meta=True)
    def slide_clause(self, meta: Any, children: list[Any]) -> ast.SlideClause:
        quantity = children[0] if isinstance(children[0], ast.Quantity) else None
        return ast.SlideClause(quantity=quantity, span=self._span(meta))

    @v_args(meta=True)
    def wattr_clause(self, meta: Any, children: list[ast.Name]) -> ast.WattrClause:
        return ast.WattrClause(attrs=tuple(children), span=self._span(meta))

    @v_args(meta=True)
    def rattr_clause(self, meta: Any, children: list[ast.Name]) -> ast.RattrClause:
        return ast.RattrClause(attr=children[0], span=self._span(meta))

    @v_args(meta=True)
    def sattr_clause(self, meta: Any, children: list[Any]) -> ast.SattrClause:
        return ast.SattrClause(attr=children[-1], rank=len(children) == 2, span=self._span(meta))

    @v_args(meta=True)
    def pattr_clause(self, meta: Any, children: list[ast.Name]) -> ast.PattrClause:
        return ast.PattrClause(attrs=tuple(children), span=self._span(meta))

    @v_args(meta=True)
    def align_clause(self, meta: Any, children: list[Any]) -> ast.AlignClause:
        anchor = "end"
        rest = list(children)
        if isinstance(rest[0], Token) and rest[0].type in {"START", "END"}:
            anchor = rest.pop(0).type.lower()
        if isinstance(rest[0], Token) and rest[0].type == "TIMESTAMP":
            rest.pop(0)
        value = rest[0]
        if isinstance(value, Token) and value.type == "FIRST":
            value = None
        elif isinstance(value, Token):
            value = unquote_string(str(value))
        return ast.AlignClause(value=value, anchor=anchor, span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def slack_clause(self, meta: Any, children: list[Any]) -> ast.SlackClause:
        mode = children[1].type.lower() if len(children) > 1 else None
        return ast.SlackClause(quantity=children[0], mode=mode, span=self._span(meta))

    @v_args(meta=True)
    def snapshot_clause(self, meta: Any, children: list[Any]) -> ast.SnapshotClause:
        return ast.SnapshotClause(span=self._span(meta))

    @v_args(meta=True)
    def clip_clause(self, meta: Any, children: list[Any]) -> ast.ClipClause:
        return ast.ClipClause(span=self._span(meta))

    @v_args(meta=True)
    def snap_clause(self, meta: Any, children: list[Any]) -> ast.SnapClause:
        return ast.SnapClause(span=self._span(meta))

    @v_args(meta=True)
    def session_clause(self, meta: Any, children: list[ast.Quantity]) -> ast.SessionClause:
        longest = children[1] if len(children) > 1 else None
        return ast.SessionClause(gap=children[0], max=longest, span=self._span(meta))

    @v_args(meta=True)
    def frame_clause(self, meta: Any, children: list[ast.FrameClause]) -> ast.FrameClause:
        return replace(children[0], span=self._span(meta))

    def threshold_frame(self, children: list[Any]) -> ast.FrameClause:
        minimum = children[1] if len(children) > 1 else None
        return ast.FrameClause(rule="threshold", condition=children[0], minimum=minimum)

    def delta_frame(self, children: list[Any]) -> ast.FrameClause:
        return ast.FrameClause(rule="delta", delta=children[0], on=children[1])

    def aggregate_frame(self, children: list[Any]) -> ast.FrameClause:
        return ast.FrameClause(rule="aggregate", condition=children[0])

    @v_args(meta=True)
    def cumulate_clause(self, meta: Any, children: list[Any]) -> ast.CumulateClause:
        return ast.CumulateClause(span=self._span(meta))

    @v_args(meta=True)
    def kafka_clause(self, meta: Any, children: list[Any]) -> ast.KafkaClause:
        return ast.KafkaClause(span=self._span(meta))

    @v_args(meta=True)
    def full_clause(self, meta: Any, children: list[Any]) -> ast.FullClause:
        end = str(children[1]).lower() if len(children) > 1 else None
        return ast.FullClause(end=end, span=self._span(meta))  # type: ignore[arg-type]

    @v_args(meta=True)
    def own_end_clause(self, meta: Any, children: list[Any]) -> ast.OwnEndClause:
        return ast.OwnEndClause(span=self._span(meta))

    @v_args(meta=True)
    def time_zone_clause(self, meta: Any, children: list[Any]) -> ast.TimeZoneClause:
        return ast.TimeZoneClause(zone=unquote_string(str(children[0])), span=self._span(meta))

    @v_args(meta=True)
    def window(self, meta: Any, children: list[Any]) -> ast.WindowSpec:
        return ast.WindowSpec(clauses=tuple(children), span=self._span(meta))

    # SELECT -----------------------------------------------------------------
    @v_args(meta=True)
    def select_item(self, meta: Any, children: list[Any]) -> ast.SelectItem:
        alias = children[1] if len(children) > 1 else None
        return ast.SelectItem(expr=children[0], alias=alias, span=self._span(meta))

    def where(self, children: list[Any]) -> tuple[str, Any]:
        return ("where", children[0])

    def group_by(self, children: list[Any]) -> tuple[str, Any]:
        return ("group_by", tuple(children))

    def having(self, children: list[Any]) -> tuple[str, Any]:
        return ("having", children[0])

    def order_by(self, children: list[Any]) -> tuple[str, Any]:
        return ("order_by", tuple(children))

    @v_args(meta=True)
    def limit(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        return ("limit", self._integer(children[0], "LIMIT"))

    @v_args(meta=True)
    def emit(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        words = [token.type for token in children]
        for index, token in enumerate(children):
            if token.type in words[:index]:
                raise WQLSyntaxError(f"EMIT {token.type} is given twice", span=self._token_span(token))
        if "FINAL" in words and "CHANGES" in words:
            second = children[max(words.index("FINAL"), words.index("CHANGES"))]
            raise WQLSyntaxError(
                "EMIT FINAL and EMIT CHANGES exclude each other",
                span=self._token_span(second),
                hint="FINAL emits each window once, when it can no longer change; CHANGES, each time it changes",
            )
        mode = "final" if "FINAL" in words else "changes" if "CHANGES" in words else None
        return ("emit", (mode, "EMPTY" in words))

    def emit_word(self, children: list[Token]) -> Token:
        return children[0]

    @v_args(meta=True)
    def order_item(self, meta: Any, children: list[Any]) -> ast.OrderItem:
        descending = False
        nulls = None
        for token in children[1:]:
            if token.type == "DESC":
                descending = True
            elif token.type in {"FIRST", "LAST"}:
                nulls = token.type.lower()
        return ast.OrderItem(expr=children[0], descending=descending, nulls=nulls, span=self._span(meta))

    @v_args(meta=True)
    def select(self, meta: Any, children: list[Any]) -> ast.Select:
        items = tuple(c for c in children if isinstance(c, ast.SelectItem))
        stream = next(c for c in children if isinstance(c, ast.Name))
        window = next((c for c in children if isinstance(c, ast.WindowSpec)), None)
        clauses = dict(c for c in children if isinstance(c, tuple))
        if "emit" in clauses:
            clauses["emit"], clauses["emit_empty"] = clauses["emit"]
        return ast.Select(items=items, stream=stream, window=window, span=self._span(meta), **clauses)

    @v_args(meta=True)
    def explain(self, meta: Any, children: list[Any]) -> ast.Explain:
        return ast.Explain(select=children[0], span=self._span(meta))

    def __default__(self, data: str, children: list[Any], meta: Any) -> Any:
        return Tree(data, children, meta)
