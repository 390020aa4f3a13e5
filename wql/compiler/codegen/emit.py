"""Small helpers that turn names and values from a query into safe Python source.

Everything from a query reaches generated code through these functions: strings
become Python literals via repr (inert whatever they contain), Spark column
names are backquoted when they are not plain identifiers, comments cannot end
early, and Python identifiers are sanitized.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterable

# Names a generated job defines at the top level, which a stream's parameter name must not shadow.
RESERVED = frozenset(
    {"query", "main", "spark", "F", "sys", "Window", "prepare", "lift", "shares", "merge", "windows", "finish"}
)

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNSAFE_COMMENT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\ufeff]")


def py(value: object) -> str:
    """A Python literal for a str, int, float, bool, None, or list/tuple/dict of them."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"float({str(value)!r})"
        return repr(value)
    if isinstance(value, str):
        text = repr(value)
        if text.startswith("'") and '"' not in value:
            return '"' + text[1:-1] + '"'  # repr escaped everything but quotes; none to escape here
        return text
    if isinstance(value, bool | int) or value is None:
        return repr(value)
    if isinstance(value, list | tuple):
        items = ", ".join(py(v) for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py(k)}: {py(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no literal for {type(value).__name__}")


def number(value: int | float) -> str:
    """A readable numeric literal: 300_000_000 rather than 300000000."""
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:_}"
    return py(value)


def spark_name(name: str) -> str:
    """A column name as Spark resolves it: backquoted unless it is a plain identifier."""
    if _PLAIN.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> str:
    return f"F.col({py(spark_name(name))})"


def expr(sql: str) -> str:
    return f"F.expr({py(sql)})"


def comment(text: str, prefix: str = "# ") -> list[str]:
    """Comment lines for arbitrary text; control characters are escaped so a comment cannot end early."""
    lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        safe = _UNSAFE_COMMENT.sub(
            lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", line
        )
        lines.append((prefix + safe).rstrip())
    return lines


def identifier(name: str, taken: Iterable[str] = ()) -> str:
    """A Python identifier made from a stream name: lower-case, [a-z0-9_], not a keyword or taken."""
    base = re.sub(r"[^0-9a-z_]+", "_", name.lower()).strip("_") or "stream"
    if base[0].isdigit():
        base = "s_" + base
    if keyword.iskeyword(base) or base in RESERVED:
        base = base + "_"
    used = set(taken)
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


class Raw(str):
    """Python source to place as it is (a constant's name, an expression), not as a literal."""


class Code:
    """Lines of Python with an indentation level."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def __call__(self, *lines: str) -> Code:
        for line in lines:
            self.lines.append(("    " * self.level + line) if line else "")
        return self

    def comment(self, text: str) -> Code:
        return self(*comment(text))

    def blank(self, count: int = 1) -> Code:
        """Blank lines up to `count` in a row (two between top-level definitions)."""
        while self.lines and self.lines[-count:] != [""] * count:
            self.lines.append("")
        return self

    def indent(self) -> Code:
        self.level += 1
        return self

    def dedent(self) -> Code:
        self.level -= 1
        return self

    def call(
        self,
        target: str,
        function: str,
        positional: Iterable[str] = (),
        keywords: dict[str, object] | None = None,
    ) -> Code:
        """`target = function(…)` with one argument per line; positional items are source, keyword
        values are literals (via py) unless Raw, and long lists get one element per line."""
        self(f"{target} = {function}(")
        self.indent()
        for item in positional:
            self(item + ",")
        for name, value in (keywords or {}).items():
            if isinstance(value, Raw):
                self(f"{name}={value},")
            elif isinstance(value, list) and len(py(value)) > 80:
                self(f"{name}=[")
                self.indent()
                for element in value:
                    self(f"{py(element)},")
                self.dedent()
                self("],")
            else:
                self(f"{name}={py(value)},")
        self.dedent()
        return self(")")

    def render(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"
