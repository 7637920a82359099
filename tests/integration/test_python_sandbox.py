"""python.safe and python.trusted on a real bridge, each step in a real bubblewrap sandbox."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import ToolResult
from contracts.python_steps import MAX_OUTPUT_BYTES, code_sha256
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()
SPEC_EXAMPLE = (
    "import bpy\nobj=bpy.data.objects.get('Plane')\nprint(obj.name if obj else 'missing')"
)


async def step(bridge: BridgeProcess, code: str, mode: str = "safe", **extra: Any) -> ToolResult:
    return await call(bridge, f"python.{mode}", code=code, code_sha256=code_sha256(code), **extra)


async def ran(bridge: BridgeProcess, code: str, mode: str = "safe", **extra: Any) -> ToolResult:
    result = await step(bridge, code, mode, **extra)
    assert result.ok, result
    assert result.data is not None
    return result


async def snapshot(bridge: BridgeProcess) -> dict[str, Any]:
    data = (await ok(bridge, "scene.snapshot")).data
    assert data is not None
    return data


def obj(snap: dict[str, Any], name: str) -> dict[str, Any]:
    return next(o for o in snap["objects"] if o["name"] == name)


async def test_spec_example_when_plane_missing_then_present_prints_its_name(
    bridge: BridgeProcess,
) -> None:
    missing = await ran(bridge, SPEC_EXAMPLE)
    assert missing.data == {
        "mode": "safe",
        "code_sha256": code_sha256(SPEC_EXAMPLE),
        "output": "missing\n",
        "output_bytes": 8,
        "wrote": False,
    }
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    before = await bridge.fingerprint()
    found = await ran(bridge, SPEC_EXAMPLE)
    assert found.data is not None and found.data["output"] == "Plane\n"
    assert not found.mutated and await bridge.fingerprint() == before


async def test_safe_when_transform_changed_the_bridge_scene_has_it(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    before = await bridge.fingerprint()
    code = (
        "import bpy\nc = bpy.data.objects['Cube']\nc.location.z += 1.5\n"
        "c.scale = (2, 2, 2)\nc.rotation_euler[2] = 0.5\nc.hide_render = True\n"
        "print(tuple(c.location), c.type, len(bpy.data.objects), bpy.data.objects.keys())"
    )
    result = await ran(bridge, code)
    assert result.mutated and result.data is not None and result.data["wrote"] is True
    assert result.data["output"] == "(0.0, 0.0, 1.5) MESH 1 ['Cube']\n"
    cube = obj(await snapshot(bridge), "Cube")
    assert cube["location"] == [0.0, 0.0, 1.5] and cube["scale"] == [2.0, 2.0, 2.0]
    assert cube["rotation"][2] == pytest.approx(0.5)
    assert await bridge.fingerprint() != before


async def test_safe_when_material_and_modifier_changed_the_scene_has_them(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    await ok(bridge, "material.assign", object="Cube", material="Paint", roughness=0.5)
    await ok(bridge, "modifier.add", object="Cube", type="BEVEL", name="Bevel")
    code = (
        "import bpy\nm = bpy.data.materials['Paint']\nprint(m.roughness)\n"
        "m.base_color = (1, 0, 0, 1)\nm.metallic = 0.75\n"
        "mod = bpy.data.objects['Cube'].modifiers['Bevel']\nmod.set('segments', 3)\n"
        "print(mod.type, mod.get('segments'), bpy.data.objects['Cube'].active_material.name)"
    )
    result = await ran(bridge, code)
    assert result.data is not None and result.data["output"] == "0.5\nBEVEL 3 Paint\n"
    snap = await snapshot(bridge)
    bevel = obj(snap, "Cube")["modifiers"][0]
    assert bevel["properties"]["segments"] == 3
    paint = next(m for m in snap["materials"] if m["name"] == "Paint")
    assert paint["base_color"][:3] == [1.0, 0.0, 0.0] and paint["metallic"] == 0.75


async def test_safe_when_modifier_property_over_its_cap_is_refused(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    await ok(bridge, "modifier.add", object="Cube", type="ARRAY", name="Array")
    before = await bridge.fingerprint()
    code = "import bpy\nbpy.data.objects['Cube'].modifiers['Array'].set('count', 100000)"
    result = await step(bridge, code)
    assert result.error_code == "invalid_input" and not result.mutated
    assert "line 2" in result.message and "at most 1000" in result.message
    assert await bridge.fingerprint() == before


async def test_safe_modifier_get_when_property_is_a_choice_text_or_absent_answers_as_dict_get(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    await ok(bridge, "modifier.add", object="Cube", type="ARRAY", name="Array")
    code = (
        "import bpy\nmod = bpy.data.objects['Cube'].modifiers['Array']\n"
        "print(mod.get('fit_type'), mod.get('count'), repr(mod.get('name')))\n"
        "print(mod.get('no_such'), mod.get('no_such', 7), mod.get('_private', 'x'))"
    )
    result = await ran(bridge, code)
    assert result.data is not None
    assert result.data["output"] == "FIXED_COUNT 2 'Array'\nNone 7 x\n"
    assert not result.mutated


async def test_safe_modifier_get_when_property_is_hidden_refuses_naming_it(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    await ok(bridge, "modifier.add", object="Cube", type="ARRAY", name="Array")
    code = "import bpy\nbpy.data.objects['Cube'].modifiers['Array'].get('offset_object')"
    result = await step(bridge, code)
    assert result.error_code == "invalid_input" and not result.mutated
    assert "line 2" in result.message and "'offset_object'" in result.message
    assert "a safe step cannot read or set it" in result.message
    assert "AttributeError" not in result.message


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("x\\x00y", "control character (U+0000)"),
        ("tab\\there", "control character (U+0009)"),
        ("\u00e9" * 32, "64 bytes of UTF-8"),
    ],
)
async def test_safe_object_name_when_blender_would_cut_it_refuses_and_keeps_scene(
    bridge: BridgeProcess, name: str, said: str
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    before = await bridge.fingerprint()
    result = await step(bridge, f"import bpy\nbpy.data.objects['Cube'].name = '{name}'")
    assert result.error_code == "invalid_input" and not result.mutated
    assert "line 2" in result.message and said in result.message
    assert await bridge.fingerprint() == before


async def test_safe_when_group_input_set_the_modifier_has_it(bridge: BridgeProcess) -> None:
    target = {"object": "Plane", "modifier": "GeometryNodes"}
    await ok(bridge, "object.create", primitive="plane", name="Plane")
    await ok(bridge, "gn.ensure_target", **target, allow_create_modifier=True)
    socket = {"in_out": "INPUT", "name": "Density", "socket_type": "NodeSocketFloat"}
    await ok(bridge, "gn.set_group_io", **target, **socket)
    before = await bridge.fingerprint()
    code = (
        "import bpy\nmod = bpy.data.objects['Plane'].modifiers['GeometryNodes']\n"
        "print(mod.inputs.keys(), mod.inputs['Density'])\nmod.inputs['Density'] += 2.5\n"
        "print(mod.inputs['Density'])"
    )
    result = await ran(bridge, code)
    assert result.data is not None and result.data["output"] == "['Density'] 0.0\n2.5\n"
    assert result.mutated and await bridge.fingerprint() != before
    again = await ran(bridge, "import bpy\nprint(bpy.data.objects['Plane'].modifiers"
                      "['GeometryNodes'].inputs['Density'])")  # fmt: skip
    assert again.data is not None and again.data["output"] == "2.5\n"


async def test_safe_when_code_fails_names_the_line_and_leaves_scene(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    before = await bridge.fingerprint()
    code = "import bpy\nbpy.data.objects['Cube'].location.x = 5\nprint('half')\n1 / 0\n"
    result = await step(bridge, code)
    assert result.error_code == "invalid_input" and not result.mutated
    assert "line 4: ZeroDivisionError" in result.message and "half" in result.message
    assert await bridge.fingerprint() == before


async def test_safe_when_syntax_is_wrong_names_the_line(bridge: BridgeProcess) -> None:
    result = await step(bridge, "x = 1\nif x\n")
    assert result.error_code == "invalid_input" and "line 2" in result.message.lower()


async def test_safe_when_line_breaks_escaped_twice_says_so(bridge: BridgeProcess) -> None:
    # Spec 004's own example, read as JSON, holds backslash-n rather than line breaks.
    result = await step(bridge, "import bpy\\nprint(len(bpy.data.objects))")
    assert result.error_code == "invalid_input" and not result.mutated
    assert "holds the two characters \\n" in result.message


async def test_safe_when_math_imported_it_works(bridge: BridgeProcess) -> None:
    result = await ran(bridge, "import math\nprint(round(math.sqrt(16)), math.pi > 3)")
    assert result.data is not None and result.data["output"] == "4 True\n"


async def test_trusted_when_real_bpy_adds_an_object_the_scene_has_it(
    bridge: BridgeProcess,
) -> None:
    code = "import bpy\nbpy.ops.mesh.primitive_cube_add(location=(0, 0, 3))\nprint('added')"
    result = await ran(bridge, code, "trusted")
    assert result.mutated and result.data is not None and result.data["mode"] == "trusted"
    assert result.data["output"] == "added\n"
    assert obj(await snapshot(bridge), "Cube")["location"] == [0.0, 0.0, 3.0]


@pytest.mark.clause("001-§error-codes.4", "001-§capability-gate.4")
async def test_trusted_when_step_links_a_library_is_refused_and_leaves_scene(
    bridge: BridgeProcess,
) -> None:
    # The step links from a file of its own, then points the library at a host file: the
    # bridge would read that one, relative to where it opens the step's scene.
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    before = await bridge.fingerprint()
    code = (
        "import bpy\nbpy.ops.mesh.primitive_cube_add()\nbpy.context.active_object.name = 'Bait'\n"
        "bpy.ops.wm.save_as_mainfile(filepath='/sandbox/bait.blend', copy=True)\n"
        "bpy.data.objects.remove(bpy.data.objects['Bait'])\n"
        "with bpy.data.libraries.load('/sandbox/bait.blend', link=True) as (_, to):\n"
        "    to.objects = ['Bait']\n"
        "bpy.context.scene.collection.objects.link(to.objects[0])\n"
        "bpy.data.libraries[0].filepath = '//../../../scenes/bobprivate.blend'\nprint('linked')"
    )
    result = await step(bridge, code, "trusted")
    assert result.error_code == "policy_refused" and not result.mutated, result
    assert result.message.startswith("python.trusted: the step's scene: cannot load")
    assert "library 'bait.blend' (bobprivate.blend)" in result.message
    assert "/" not in result.message.partition("cannot load")[2]  # no host path
    assert await bridge.fingerprint() == before


async def test_trusted_when_threads_started_they_run(bridge: BridgeProcess) -> None:
    code = (
        "import threading\ndone = []\nts = [threading.Thread(target=done.append, args=(i,)) "
        "for i in range(4)]\nfor t in ts: t.start()\nfor t in ts: t.join()\nprint(sorted(done))"
    )
    result = await ran(bridge, code, "trusted")
    assert result.data is not None and result.data["output"] == "[0, 1, 2, 3]\n"


EVERYDAY = """
import bpy, bmesh, hashlib, json, os, random, shutil, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor
os.makedirs('/sandbox/work', exist_ok=True)
with tempfile.NamedTemporaryFile('w', dir='/tmp', delete=False) as f:
    f.write(json.dumps({'seed': random.Random(1).random()}))
shutil.copy(f.name, '/sandbox/work/copy.json')
os.rename('/sandbox/work/copy.json', '/sandbox/work/seed.json')
time.sleep(0.01)
with ThreadPoolExecutor(4) as pool:
    sums = list(pool.map(lambda i: hashlib.sha256(bytes([i])).hexdigest()[:4], range(4)))
bpy.ops.mesh.primitive_cube_add(location=(0, 0, 2))
cube = bpy.context.active_object
cube.name = 'Everyday'
mesh = bmesh.new()
mesh.from_mesh(cube.data)
bmesh.ops.subdivide_edges(mesh, edges=mesh.edges, cuts=1)
mesh.to_mesh(cube.data)
mesh.free()
bevel = cube.modifiers.new('Bevel', 'BEVEL')
bevel.width = 0.05
bpy.context.view_layer.objects.active = cube
bpy.ops.object.modifier_apply(modifier='Bevel')
print(sorted(os.listdir('/sandbox/work')), len(sums), len(cube.data.polygons) > 24)
"""


async def test_trusted_when_a_step_does_what_steps_do_the_allow_list_lets_it(
    bridge: BridgeProcess,
) -> None:
    # Files in its own folders, threads, time, randomness, bmesh and an applied modifier:
    # the calls a step makes, all on the seccomp allow-list (syscall_table.ALLOWED).
    result = await ran(bridge, EVERYDAY, "trusted")
    assert result.data is not None, result
    assert result.data["output"] == "['seed.json'] 4 True\n"
    assert obj(await snapshot(bridge), "Everyday")["location"] == [0.0, 0.0, 2.0]


async def test_output_when_under_the_bound_is_returned_with_its_size(
    bridge: BridgeProcess,
) -> None:
    code = "print('é' * 1000)"
    result = await ran(bridge, code)
    assert result.data is not None and result.data["output_bytes"] == 2001
    assert result.data["output"] == "é" * 1000 + "\n"


async def test_output_when_over_the_bound_is_refused_naming_it(bridge: BridgeProcess) -> None:
    result = await step(bridge, f"print('x' * {MAX_OUTPUT_BYTES})")
    assert result.error_code == "policy_refused"
    assert f"more than {MAX_OUTPUT_BYTES} bytes" in result.message


@pytest.mark.clause("001-§timeouts.2")
async def test_timeout_when_exceeded_stops_the_step_and_leaves_scene(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Cube")
    before = await bridge.fingerprint()
    code = "import bpy\nbpy.data.objects['Cube'].location.x = 9\nwhile True:\n    pass\n"
    result = await step(bridge, code, timeout_ms=300)
    assert result.error_code == "timeout" and not result.mutated
    assert "timeout_ms=300" in result.message
    assert await bridge.fingerprint() == before
    assert (await ran(bridge, "print('next')")).ok  # a fresh sandbox serves the next step


async def test_warm_process_when_a_step_ran_is_replaced_for_the_next(
    bridge: BridgeProcess,
) -> None:
    first = (
        "import sys, bpy\nopen('/sandbox/mark', 'w').write('1')\nopen('/tmp/mark', 'w')\n"
        "sys.modules['leftover'] = sys\nbpy.app.driver_namespace['leftover'] = 1\nprint('set')"
    )
    await ran(bridge, first, "trusted")
    second = (
        "import os, sys, bpy\nprint(os.path.exists('/sandbox/mark'), os.path.exists('/tmp/mark'),"
        " 'leftover' in sys.modules, 'leftover' in bpy.app.driver_namespace)"
    )
    result = await ran(bridge, second, "trusted")
    assert result.data is not None and result.data["output"] == "False False False False\n"


async def test_code_sha256_when_not_the_code_hash_is_refused(bridge: BridgeProcess) -> None:
    result = await call(bridge, "python.safe", code="print(1)", code_sha256=code_sha256("print(2)"))
    assert result.error_code == "invalid_input" and "code_sha256" in result.message
    assert code_sha256("print(1)") in result.message


async def test_arguments_when_timeout_over_the_maximum_are_refused(bridge: BridgeProcess) -> None:
    result = await step(bridge, "print(1)", timeout_ms=60_001)
    assert result.error_code == "invalid_input" and "timeout_ms" in result.message


async def _own_bridge(env: dict[str, str], code: str) -> ToolResult:
    process = BridgeProcess(env=env)
    await process.start()
    try:
        return await step(process, code)
    finally:
        await process.close()


async def test_profile_when_sandbox_starts_or_not_says_so(shared_bridge: BridgeProcess) -> None:
    assert shared_bridge.profile.sandbox == "bubblewrap"
    process = BridgeProcess(env={**os.environ, "BLENDMESH_BWRAP": "/nonexistent/bwrap"})
    await process.start()
    try:
        assert process.profile.sandbox == "none"  # the executor's gate refuses Python then
    finally:
        await process.close()


@pytest.mark.clause("001-§capability-gate.4", "001-§error-codes.3")
async def test_sandbox_when_bwrap_missing_refuses_with_capability_missing() -> None:
    env = {**os.environ, "BLENDMESH_BWRAP": "/nonexistent/bwrap"}
    result = await _own_bridge(env, SPEC_EXAMPLE)
    assert result.error_code == "capability_missing" and not result.mutated
    assert "bubblewrap" in result.message and "never runs them unconfined" in result.message


async def test_sandbox_when_home_inside_a_bound_path_refuses(tmp_path: Path) -> None:
    import sys

    env = {**os.environ, "BLENDMESH_HOME": os.path.join(sys.prefix, "home")}
    result = await _own_bridge(env, SPEC_EXAMPLE)
    assert result.error_code == "capability_missing" and "BLENDMESH_HOME" in result.message
