"""How the bridge frames a big result: a scene's inspection and summary are written by
msgspec (``server.MSGSPEC_FRAMED``) and read exactly as the json module would have
written them; a non-finite float in one becomes null, never a number, which the
executor's typed decode refuses where a number is due."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from contracts.inspection import SceneInspection
from contracts.scenes import SceneSummary
from tests.support.bridges import SERVER_PRELUDE, script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCRIPT = (
    SERVER_PRELUDE
    + """
import io
import msgspec
from contracts.bridge import Response
from contracts.scenes import ObjectSummary, SceneSummary
def call(tool, **arguments):
    return answer("tools/call", name=tool, arguments=arguments)
call("object.create", primitive="cube", name="Desk", location=[1, 2, 0.5])
call("object.create", primitive="uv_sphere", name="Ball", rotation=[0.5, 0, 1.0])
call("material.assign", object="Ball", material="Red", base_color=[1, 0, 0, 1])
found = {}
for method, params in (("blendmesh/scene.inspect", {}),
                       ("blendmesh/scene.summary", {"scene_id": "desk-1"})):
    response = answer(method, **params)
    s.out = io.StringIO()  # the line the executor would have read
    s.write(response)
    found[method] = {
        "framed": s.out.getvalue(),
        "by_json": json.dumps(msgspec.to_builtins(response), ensure_ascii=False),
    }
bad = SceneSummary(scene_id="s", scene_hash="h", materials=[], objects=[ObjectSummary(
    name="Lost", type="MESH", location=[float("nan"), 0.0, 0.0], rotation_degrees=[0, 0, 0],
    scale=[1, 1, 1], modifiers=[], materials=[])])
s.out = io.StringIO()
s.write(Response(id=9, result=bad))
found["nan"] = s.out.getvalue()
print("RESULT", json.dumps(found))
"""
)


def _result(line: str) -> Any:
    assert line.endswith("\n")  # one line a response
    return json.loads(line)["result"]


async def test_big_results_when_framed_by_msgspec_read_as_the_json_module_wrote_them() -> None:
    found, _ = await script_result(SCRIPT)
    for method in ("blendmesh/scene.inspect", "blendmesh/scene.summary"):
        framed = found[method]["framed"]
        assert json.loads(framed) == json.loads(found[method]["by_json"]), method
    # What the executor's bridge client does with each result: a typed decode.
    inspected = msgspec.convert(
        _result(found["blendmesh/scene.inspect"]["framed"]), SceneInspection
    )
    summary = msgspec.convert(_result(found["blendmesh/scene.summary"]["framed"]), SceneSummary)
    assert {o.name for o in inspected.objects} == {o.name for o in summary.objects} >= {"Ball"}


async def test_big_results_when_holding_a_non_finite_float_are_refused_by_the_executor() -> None:
    found, _ = await script_result(SCRIPT)
    result = _result(found["nan"])  # valid JSON: the json module would have refused to write it
    assert result["objects"][0]["location"] == [None, 0.0, 0.0]
    with pytest.raises(msgspec.ValidationError, match="Expected `float`, got `null`"):
        msgspec.json.decode(json.dumps(result), type=SceneSummary)
