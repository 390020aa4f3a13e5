"""Which kind a window spec is, and its resolution by that kind: the spec's Window, every default filled in.

`resolve_window` reads the clauses that say which kind a spec is (SESSION or FRAME, SNAPSHOT, SLIDE
KAFKA, a slide in rows, else a grid) and hands the rest to that kind's module, which checks its own
clauses (`kinds.clauses` has what they share). Defaults (docs/language.md §5.9):
- no SLIDE: tumbling, SLIDE = RANGE; no RANGE: RANGE = SLIDE.
- SLIDE in ROWS with a non-row attribute and no SATTR: SATTR row_num.
- SATTR row_num or rank(a) without SLIDE: SLIDE 1 ROW.
- no WATTR/RATTR: ROWS mean row_num; time units mean the stream's only TIMESTAMP
  column; SATTR rank(a) or SATTR a names a.
- no ALIGN: origin 0 (the epoch for timestamps).
- SLACK without a mode: CONSISTENT.
- SNAPSHOT: no RANGE, SLIDE or ALIGN; the events' endpoints cut the windows.
- SESSION/FRAME without WATTR: a GAP (or MIN) in time units means the stream's only
  TIMESTAMP column, in ROWS row_num; a FRAME with neither, the only TIMESTAMP column.
"""

from __future__ import annotations

from wql.compiler.kinds.calendar import is_calendar, resolve_calendar, time_zone
from wql.compiler.kinds.clauses import Clauses, scaled
from wql.compiler.kinds.cumulate import check_cumulate
from wql.compiler.kinds.data_driven import order_attribute
from wql.compiler.kinds.frames import frame_rule
from wql.compiler.kinds.grid import check_align_first, check_kafka_grid
from wql.compiler.kinds.kafka import resolve_kafka
from wql.compiler.kinds.landmark import check_own_end
from wql.compiler.kinds.rows import check_full
from wql.compiler.kinds.sessions import session_rule
from wql.compiler.kinds.slide_by_tuple import resolve_by_tuple
from wql.compiler.kinds.snapshot import resolve_snapshot
from wql.compiler.schema import ROW_NUM, Domain, Stream
from wql.compiler.units import Number, to_base
from wql.compiler.windows import Attribute, Form, SlideOn, Window
from wql.grammar import ast
from wql.grammar.errors import Span, WQLNotSupportedError, WQLSemanticError

# Clauses that shape grid and tuple windows and have no meaning for sessions and frames.
_NOT_DATA_DRIVEN: dict[type, str] = {
    ast.RangeClause: "RANGE",
    ast.SlideClause: "SLIDE",
    ast.RattrClause: "RATTR",
    ast.SattrClause: "SATTR",
    ast.AlignClause: "ALIGN",
    ast.CumulateClause: "CUMULATE",
    ast.FullClause: "FULL",
    ast.OwnEndClause: "OWN END",
    ast.SnapshotClause: "SNAPSHOT",
    ast.ClipClause: "CLIP",
    ast.SnapClause: "SNAP",
    ast.TimeZoneClause: "TIME ZONE",
}


def resolve_window(spec: ast.WindowSpec | None, stream: Stream, at: Span | None = None) -> Window:
    """Check a window spec against a stream and fill in the defaults."""
    if spec is None:
        raise WQLSemanticError(
            f"no window on stream '{stream.name}'",
            span=at,
            hint=f"name one in brackets after the stream: FROM {stream.name} [RANGE 5 MINUTES SLIDE 1 MINUTE]",
        )
    return resolve(Clauses(spec, stream))


def resolve(clauses: Clauses) -> Window:
    """The window a spec names: which kind it is decides who resolves the rest."""
    if clauses.get(ast.SessionClause) is not None or clauses.get(ast.FrameClause) is not None:
        return resolve_runs(clauses)
    rng = clauses.get(ast.RangeClause)
    slide = clauses.get(ast.SlideClause)
    wattr = clauses.get(ast.WattrClause)
    rattr = clauses.get(ast.RattrClause)
    sattr = clauses.get(ast.SattrClause)
    assert rng is None or isinstance(rng, ast.RangeClause)
    assert slide is None or isinstance(slide, ast.SlideClause)
    assert wattr is None or isinstance(wattr, ast.WattrClause)
    assert rattr is None or isinstance(rattr, ast.RattrClause)
    assert sattr is None or isinstance(sattr, ast.SattrClause)

    if wattr is not None and rattr is not None:
        raise WQLSemanticError(
            "WATTR already names the range attribute",
            span=rattr.span,
            hint="use WATTR a for both range and slide, or RATTR a with SATTR b",
        )
    if wattr is not None and sattr is not None:
        raise WQLSemanticError(
            "WATTR already names the slide attribute",
            span=sattr.span,
            hint="use RATTR a with SATTR b to range and slide on different attributes",
        )
    snapshot = clauses.get(ast.SnapshotClause)
    if snapshot is not None:
        return resolve_snapshot(clauses, snapshot, wattr)
    if rng is None and slide is None:
        raise WQLSemanticError(
            "the window has no RANGE or SLIDE",
            span=clauses.spec.span,
            hint="e.g. [RANGE 5 MINUTES SLIDE 1 MINUTE], or [RANGE 100 ROWS]",
        )
    kafka = slide is not None and slide.quantity is None
    unbounded = rng is not None and rng.quantity is None
    if unbounded and slide is None:
        assert rng is not None
        raise WQLSemanticError(
            "a landmark window (RANGE UNBOUNDED) needs SLIDE: how often to report",
            span=rng.span,
            hint="e.g. [RANGE UNBOUNDED SLIDE 1 HOUR]",
        )

    attr, end_attr = _range_attribute(clauses, rng, slide, wattr, rattr, sattr)
    slide_on = _slide_on(clauses, slide, sattr, attr)
    if kafka:
        clauses.reject_variants("SLIDE KAFKA windows are placed at the records")
        return resolve_kafka(clauses, rng, attr, end_attr, sattr)
    if slide_on is not SlideOn.ATTRIBUTE:
        clauses.reject_variants("windows that slide by rows are named by their last tuple, so they have no grid")
        return resolve_by_tuple(clauses, rng, slide, attr, slide_on, end_attr)
    one_row = sattr is not None and slide is None and attr.is_row_num and (sattr.rank or sattr.attr.key == ROW_NUM)
    return resolve_grid(clauses, rng, slide, attr, end_attr, unbounded, one_row)


def _range_attribute(
    clauses: Clauses,
    rng: ast.RangeClause | None,
    slide: ast.SlideClause | None,
    wattr: ast.WattrClause | None,
    rattr: ast.RattrClause | None,
    sattr: ast.SattrClause | None,
) -> tuple[Attribute, Attribute | None]:
    """The range attribute (and an interval's end): WATTR's, RATTR's, SATTR's, or the one the units imply."""
    end_attr = None
    if wattr is not None:
        attr = clauses.attribute(wattr.attrs[0], interval=len(wattr.attrs) == 2)
        if len(wattr.attrs) == 2:
            end_attr = clauses.interval_end(wattr, attr)
    elif rattr is not None:
        attr = clauses.attribute(rattr.attr)
    elif sattr is not None and sattr.attr.key != ROW_NUM:
        attr = clauses.attribute(sattr.attr)
        clauses.notes.append(f"RATTR {attr.name} (from SATTR)")
    else:
        first = rng.quantity if rng is not None and rng.quantity is not None else None
        if first is None and slide is not None and slide.quantity is not None:
            first = slide.quantity
        attr = clauses.infer_attribute(first)

    return attr, end_attr


def _slide_on(
    clauses: Clauses, slide: ast.SlideClause | None, sattr: ast.SattrClause | None, attr: Attribute
) -> SlideOn:
    """What the window slides on: its own attribute, row_num or rank(attr)."""
    slide_on = SlideOn.ATTRIBUTE
    if sattr is not None:
        if sattr.rank:
            if sattr.attr.key != attr.name.lower():
                raise WQLSemanticError(
                    f"SATTR rank({sattr.attr.text}) must rank the range attribute '{attr.name}'",
                    span=sattr.span,
                    hint=f"write SATTR rank({attr.name})",
                )
            slide_on = SlideOn.ATTRIBUTE if attr.is_row_num else SlideOn.RANK
        elif sattr.attr.key == ROW_NUM:
            slide_on = SlideOn.ATTRIBUTE if attr.is_row_num else SlideOn.ROW_NUM
        elif sattr.attr.key != attr.name.lower():
            raise WQLSemanticError(
                f"SATTR {sattr.attr.text} differs from the range attribute '{attr.name}'",
                span=sattr.span,
                hint="a window can slide on its own attribute, on row_num or on rank(attr)",
            )
    elif (
        slide is not None
        and slide.quantity is not None
        and slide.quantity.unit is ast.Unit.ROWS
        and not attr.is_row_num
    ):
        slide_on = SlideOn.ROW_NUM
        clauses.notes.append("SATTR row_num (SLIDE in ROWS over a non-row attribute)")

    return slide_on


def resolve_grid(
    clauses: Clauses,
    rng: ast.RangeClause | None,
    slide: ast.SlideClause | None,
    attr: Attribute,
    end_attr: Attribute | None,
    unbounded: bool,
    one_row: bool = False,
) -> Window:
    zone = time_zone(clauses, attr)
    if is_calendar(rng, slide, zone, attr):
        return resolve_calendar(clauses, rng, slide, attr, end_attr, unbounded, zone)
    domain = attr.domain
    range_value: Number | None = None
    range_unit = slide_unit = None
    if rng is not None and rng.quantity is not None:
        range_value = to_base(rng.quantity, domain, attr.name, "RANGE")
        range_unit = rng.quantity.unit
    if slide is not None and slide.quantity is not None:
        slide_value = to_base(slide.quantity, domain, attr.name, "SLIDE")
        slide_unit = slide.quantity.unit
    elif one_row:
        slide_value, slide_unit = 1, ast.Unit.ROWS
        clauses.notes.append("SLIDE 1 ROW (SATTR without SLIDE)")
    else:
        assert range_value is not None
        slide_value = range_value
        slide_unit = range_unit
        clauses.notes.append("SLIDE = RANGE (tumbling: no SLIDE given)")
    if range_value is None and not unbounded:
        range_value = slide_value
        range_unit = slide_unit
        clauses.notes.append("RANGE = SLIDE (tumbling: no RANGE given)")
    form = Form.LANDMARK if unbounded else Form.SLIDING
    cumulate = clauses.get(ast.CumulateClause)
    if cumulate is not None:
        form = Form.CUMULATE
        check_cumulate(clauses, cumulate, slide, attr, end_attr, range_value, slide_value, unbounded)
    kafka = clauses.get(ast.KafkaClause)
    if kafka is not None:
        check_kafka_grid(clauses, kafka, attr, end_attr, range_value, slide_value, form)
        origin = range_value % slide_value  # window starts on k·SLIDE: ends on the grid RANGE mod SLIDE
    else:
        origin = clauses.origin(attr, range_value, form, zone)
    if form is Form.CUMULATE and attr.domain is Domain.FLOAT and not float(origin).is_integer():
        raise WQLNotSupportedError(
            "CUMULATE over a DOUBLE attribute with a fractional ALIGN (edges are exact for whole numbers)",
            span=clauses.spec.span,
        )
    align = clauses.get(ast.AlignClause)
    align_first = isinstance(align, ast.AlignClause) and align.first
    if align_first:
        check_align_first(clauses, align, end_attr, form)  # type: ignore[arg-type]
    full = clauses.get(ast.FullClause)
    if isinstance(full, ast.FullClause):
        check_full(clauses, full, attr, form, kafka is not None)
    own_end = clauses.get(ast.OwnEndClause)
    if own_end is not None:
        check_own_end(clauses, own_end, form, end_attr)
    if end_attr is not None and attr.domain is Domain.DECIMAL:
        attr, end_attr = scaled(attr, end_attr, (range_value, slide_value, origin))
    return Window(
        form=form,
        attr=attr,
        end_attr=end_attr,
        range=range_value,
        slide=slide_value,
        partition_by=clauses.partition(),
        origin=origin,
        slack=clauses.slack(attr),
        defaults=tuple(clauses.notes),
        units=(range_unit, slide_unit),
        slack_unit=clauses.slack_unit(),
        **clauses.variants(form, end_attr),
        kafka_grid=kafka is not None,
        align_first=align_first,
        full_start=isinstance(full, ast.FullClause) and full.end != "end",
        full_end=isinstance(full, ast.FullClause) and full.end != "start",
        own_end=own_end is not None,
        zone=zone,
    )


# variants of grid windows -------------------------------------------------------------


def resolve_runs(clauses: Clauses) -> Window:
    """Sessions and frames: the data decides where their windows start and end."""
    session = clauses.get(ast.SessionClause)
    frame = clauses.get(ast.FrameClause)
    assert session is None or isinstance(session, ast.SessionClause)
    assert frame is None or isinstance(frame, ast.FrameClause)
    what = "a session" if session is not None else f"a {frame.rule} frame" if frame is not None else ""
    if session is not None and frame is not None:
        raise WQLSemanticError(
            "a window is a SESSION or a FRAME, not both", span=frame.span, hint="query each in its own SELECT"
        )
    for clause_type, word in _NOT_DATA_DRIVEN.items():
        clause = clauses.get(clause_type)
        if clause is not None:
            raise WQLSemanticError(
                f"{word} does not apply to {what}: the data decides where its windows start and end",
                span=clause.span,
                hint=f"drop {word}",
            )
    kafka = clauses.get(ast.KafkaClause)
    if kafka is not None and session is None:
        raise WQLSemanticError("KAFKA applies to sessions (Kafka's [first, last] sessions)", span=kafka.span)
    attr = order_attribute(clauses, session, frame)
    if session is not None:
        details, form = session_rule(session, attr, kafka is not None), Form.SESSION
    else:
        assert frame is not None
        details, form = frame_rule(frame, attr)
    return Window(
        form=form,
        attr=attr,
        range=None,
        slide=None,
        partition_by=clauses.partition(),
        slack=clauses.slack(attr),
        defaults=tuple(clauses.notes),
        slack_unit=clauses.slack_unit(),
        rule=details,
    )
