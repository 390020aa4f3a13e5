"""WQL's grammar: the lark file, the syntax tree it produces, parse errors and the formatter."""

from wql.grammar.errors import Span, WQLError, WQLSyntaxError
from wql.grammar.parser import parse, parse_statement

__all__ = ["Span", "WQLError", "WQLSyntaxError", "parse", "parse_statement"]
