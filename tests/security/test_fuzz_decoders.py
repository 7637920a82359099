"""Fuzzing what reads untrusted input: it answers, or raises its documented error only.

Any other exception in a consumer's decoder or the planner leaves a message redelivered
until it is dead-lettered and the run waits for ever, so these properties matter more
than any one example. The ``@example``s are inputs that once raised something else.
"""

from __future__ import annotations

import json
import string
from typing import Any, get_args

import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contracts.events import AnyEvent, RunRequested, decode_event, encode_event
from contracts.operations import OperationSet, convert_operation_set, decode_operation_set
from services.planner.graph import PlanInvalid, ValidPlan, validate
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.support.catalog_fixture import CATALOG

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError)
TAGS = [kind.__struct_config__.tag for kind in get_args(AnyEvent)]
DEEP = "[" * 5000 + "]" * 5000
# Inputs that pass, so what the properties say of a passing input is checked every time.
REQUESTED = RunRequested(
    event_id="e1", at=1.0, run_id="r1", request_id="q1", thread_id="t1", user="ana",
    scene_id="s1", prompt="add a cube",
)  # fmt: skip
TWO_STEPS = {
    "request_id": "r",
    "operations": [
        {"operation_id": "b", "tool_name": "object.transform", "args": {"name": "A",
         "location": [1, 2, 3]}, "depends_on": ["a"], "safety_level": "safe_write"},
        {"operation_id": "a", "tool_name": "object.create", "args": {"primitive": "cube",
         "name": "A"}, "depends_on": [], "safety_level": "safe_write"},
    ],
}  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["", "\x00", "A\x00B", "op1", "cube", "object.create", "safe_write"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)


def as_json(value: Any) -> bytes:
    """Python's json writes NaN and Infinity, which JSON does not have: good fuzz too."""
    return json.dumps(value).encode()


operations = st.fixed_dictionaries(
    {
        "operation_id": st.sampled_from(["op1", "op2", "a", "bad id", ""]) | st.text(max_size=6),
        "tool_name": st.sampled_from([*CATALOG.names, "python.exec", ""]),
        "args": st.dictionaries(
            st.sampled_from(["name", "primitive", "location", "object", "properties", "x"]),
            json_values,
            max_size=4,
        ),
        "depends_on": st.lists(st.sampled_from(["op1", "op2", "a", "zz"]), max_size=3),
        "safety_level": st.sampled_from(["read_only", "safe_write", "destructive", "unsafe"]),
    },
    optional={"extra": json_values},
)
operation_sets = (
    st.fixed_dictionaries(
        {"request_id": st.text(max_size=8), "operations": st.lists(operations, max_size=4)}
    )
    | json_values
)

events = st.fixed_dictionaries(
    {
        "type": st.sampled_from(TAGS) | st.text(max_size=8),
        "event_id": st.text(max_size=8),
        "at": json_values,
    },
    optional={
        "run_id": st.text(max_size=8),
        "request_id": json_values,
        "thread_id": st.text(max_size=8),
        "user": json_values,
        "scene_id": st.text(max_size=8),
        "plan": operation_sets,
        "operation_set": operation_sets,
        "receipts": json_values,
        "failure": json_values,
    },
)


@FUZZ
@given(data=st.binary(max_size=256) | events.map(as_json) | json_values.map(as_json))
@example(data=DEEP.encode())
@example(data=b'{"type": "run.requested", "plan": ' + DEEP.encode() + b"}")
@example(data=encode_event(REQUESTED))
def test_decode_event_when_fuzzed_raises_only_decode_errors(data: bytes) -> None:
    try:
        event = decode_event(data)
    except DECODE_ERRORS:
        return
    # What it let through is a whole event: written again, it reads back the same.
    assert decode_event(encode_event(event)) == event


@FUZZ
@given(data=st.binary(max_size=256) | operation_sets.map(as_json))
@example(
    data=b'{"request_id": "r", "operations": [{"operation_id": "a", "tool_name": "t", '
    b'"args": {"x": ' + DEEP.encode() + b'}, "depends_on": [], "safety_level": "read_only"}]}'
)
def test_decode_operation_set_when_fuzzed_raises_only_decode_errors(data: bytes) -> None:
    try:
        ops = decode_operation_set(data)
    except DECODE_ERRORS:
        return
    assert isinstance(ops, OperationSet)
    assert decode_operation_set(msgspec.json.encode(ops)) == ops


@FUZZ
@given(raw=operation_sets)
def test_convert_operation_set_when_fuzzed_raises_only_validation_errors(raw: Any) -> None:
    try:
        ops = convert_operation_set(raw)
    except msgspec.ValidationError:
        return
    assert [op.operation_id for op in ops.operations] == [
        op["operation_id"] for op in raw["operations"]
    ]


@FUZZ
@given(raw=operation_sets | operation_sets.map(as_json))
@example(raw={"request_id": "r", "operations": [{"args": {"x": 10**400}}]})
@example(raw=TWO_STEPS)
def test_validate_when_fuzzed_raises_only_plan_invalid(raw: Any) -> None:
    try:
        valid = validate(raw, CATALOG)
    except PlanInvalid:
        return
    runs_in_order(valid)


def runs_in_order(valid: ValidPlan) -> None:
    """An accepted plan runs every operation once, each after what it depends on, and
    names only tools of the catalog."""
    operations = valid.operation_set.operations
    assert sorted(valid.schedule) == sorted(op.operation_id for op in operations)
    position = {op_id: i for i, op_id in enumerate(valid.schedule)}
    for op in operations:
        assert CATALOG.get(op.tool_name) is not None, op.tool_name
        assert all(position[dep] < position[op.operation_id] for dep in op.depends_on), op


WORDS = [
    "add", "a", "an", "the", "cube", "uv", "sphere", "named", "Box", "Ball", "it", "at", "to",
    "by", "move", "rotate", "scale", "rename", "delete", "modifier", "array", "subdivision",
    "bevel", "screw", "with", "count", "levels", "segments", "steps", "width", "color", "red",
    "#ff0000", "set", "of", "on", "metallic", "roughness", "give", "material", "snapshot",
    "degrees", "and", "then", ",", ".", ";", "(", ")", "=", '"', "\x00", "\n",
]  # fmt: skip
numbers = (
    st.integers().map(str)
    | st.floats().map(str)
    | st.integers(min_value=1, max_value=6000).map(lambda n: "9" * n)
)
requests = st.lists(
    st.sampled_from(WORDS) | numbers | st.text(string.printable, max_size=4), max_size=24
).map(" ".join)


@FUZZ
@given(text=requests | st.text(max_size=64))
@example(text="add a cube at " + "9" * 5000 + " 0 0")
@example(text='add a cube named "A\x00B" at 1e400 0 0')
def test_rules_planner_when_fuzzed_raises_only_unreadable_request(text: str) -> None:
    try:
        ops = plan_request(text, "req-fuzz", CATALOG)
    except UnreadableRequest:
        return
    assert isinstance(ops, OperationSet) and ops.request_id == "req-fuzz"
    # What it plans is validated like any plan: that, too, may only refuse.
    try:
        valid = validate(msgspec.to_builtins(ops), CATALOG)
    except PlanInvalid:
        return
    runs_in_order(valid)
