"""The catalog found on demand, through the gateway's ``/mcp`` on a real mesh and real
Blender: the default listing of the real catalog stays under its token budget, a host
finds a tool of every category by category and by search, and calls them in one plan,
issue 44's bevel, unwrap and brushed-metal shader among them, with no Python step."""

from __future__ import annotations

import base64
import json
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession

from contracts.tool_categories import category_of, estimated_tokens
from services.runtime.service.settings import Settings
from tests.integration.test_bridge_shading_tools import BRUSHED_METAL
from tests.support.asset_files import glb_with_image
from tests.support.bridges import script_result
from tests.support.gateways import gateway_fixture, mcp_door
from tests.support.mcp_plans import structured
from tests.support.meshes import mesh_fixture
from tests.support.png import solid_png

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

TOKENS = {"tok-ana": "ana"}
DEFAULT_BUDGET = 4_000  # tokens, estimated as the listing's JSON characters / 4
# What no plan here calls: Python steps need their sandbox and a person's approval,
# and have tests of their own (tests/e2e, tests/security/test_python_escapes.py).
NOT_CALLED = {"python"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmfind", user="local", previews=False)


mesh = mesh_fixture(client="test-mcp-find")


gateway = gateway_fixture(TOKENS, run_timeout=240, path="/mcp")


def door(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return mcp_door(url, "tok-ana")


def _op(op_id: str, tool: str, args: dict[str, Any], after: str | None) -> dict[str, Any]:
    level = "destructive" if tool == "mesh.join" else "safe_write"
    depends = [after] if after else []
    return {"operation_id": op_id, "tool_name": tool, "args": args, "depends_on": depends,
            "safety_level": level}  # fmt: skip


def every_category_plan() -> dict[str, Any]:
    """Issue 44's bevel, unwrap and brushed-metal shader, and a tool of each other
    category, in a chain (each after the one before)."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("object.create", {"primitive": "cube", "name": "Box"}),
        ("mesh.bevel", {"object": "Box", "width": 0.05, "segments": 2}),
        ("uv.smart_project", {"object": "Box"}),
        *[(tool, {**args, "material": "Brushed"}) for tool, args in BRUSHED_METAL],
        ("material.assign_faces", {"object": "Box", "material": "Brushed"}),
        ("modifier.add", {"object": "Box", "type": "WEIGHTED_NORMAL"}),
        ("light.create", {"kind": "point", "name": "Lamp", "location": [3, -3, 4]}),
        ("keyframe.insert", {"name": "Box", "property": "location", "frame": 1}),
        ("gn.ensure_target", {"object": "Box", "modifier": "GN", "allow_create_modifier": True}),
        ("text.create", {"body": "Hi", "name": "Sign", "location": [0, 0, 3]}),
        ("empty.create", {"name": "Aim", "location": [0, 2, 0]}),
        ("render.set", {"samples": 8}),
    ]
    ops, before = [], None
    for n, (tool, args) in enumerate(calls):
        ops.append(_op(f"op{n:02d}", tool, args, before))
        before = f"op{n:02d}"
    return {"request_id": "find-every-category", "operations": ops}


async def test_default_listing_when_read_from_the_real_catalog_stays_under_budget(
    gateway: str,
) -> None:
    async with door(gateway) as session:
        listed = await session.call_tool("list_category", {})
    listing = structured(listed)
    tokens = estimated_tokens(listing)
    print(f"default listing: {len(listing['tools'])} core tools, "
          f"{len(listing['categories'])} categories, ~{tokens} tokens")  # fmt: skip
    assert tokens < DEFAULT_BUDGET, tokens
    every = sum(len(c["tools"]) for c in listing["categories"])
    assert every >= 60  # the index names every tool, not the core set alone
    full = await _whole_catalog_tokens(gateway)
    print(f"whole catalog: {every} tools, ~{full} tokens")
    assert full > 4 * tokens  # what a host that read every schema would pay


async def _whole_catalog_tokens(gateway: str) -> int:
    async with door(gateway) as session:
        catalog = await session.read_resource("blendmesh://catalog")  # type: ignore[arg-type]
    text = catalog.contents[0].text  # type: ignore[union-attr]
    return estimated_tokens(json.loads(text)["tools"])


async def test_host_when_it_looks_finds_and_calls_a_tool_of_every_category(
    gateway: str,
) -> None:
    plan = every_category_plan()
    async with door(gateway) as session:
        index = structured(await session.call_tool("list_category", {}))["categories"]
        categories = {c["category"] for c in index}
        for category in sorted(categories):
            listed = structured(await session.call_tool("list_category", {"category": category}))
            assert listed["tools"], category
        found = {}
        for op in plan["operations"]:
            words = op["tool_name"].replace(".", " ").replace("_", " ")  # "text create"
            hits = structured(await session.call_tool("search_tools", {"query": words}))
            found[op["tool_name"]] = [t["name"] for t in hits["tools"]]
        ran = await session.call_tool("run", {"scene_id": "every", "plan": plan})
    for tool, hits in found.items():
        assert tool in hits, (tool, hits)
    result = structured(ran)
    assert result["status"] == "completed", json.dumps(result)[:3000]
    called = {category_of(r["tool_name"]) for r in result["receipts"]}
    assert called == categories - NOT_CALLED, (called, categories)
    assert not any(r["tool_name"].startswith("python.") for r in result["receipts"])


async def test_issue_44_request_when_given_in_words_runs_with_no_python_step(
    gateway: str, tmp_path: Path
) -> None:
    """The whole request, its GLB too: planned by the rules, run with no Python step, and
    the file the host gets back opens in Blender with the bevelled, shaded box in it."""
    request = (
        "add a cube named Box, bevel the edges of Box by 0.05, unwrap it and give it a "
        "brushed-metal shader with a slight scratch texture, then export it as a glb"
    )
    async with door(gateway) as session:
        ran = await session.call_tool("run", {"scene_id": "words", "request": request})
        looked = await session.call_tool("inspect_object", {"scene_id": "words", "name": "Box"})
        exported = await session.call_tool("export_scene", {"scene_id": "words", "format": "glb"})
    result = structured(ran)
    assert result["status"] == "completed", json.dumps(result)[:3000]
    tools = [r["tool_name"] for r in result["receipts"]]
    assert {"modifier.add", "uv.smart_project", "shader.create", "shader.set_ramp"} <= set(tools)
    assert tools[-1] == "scene.export", tools  # the export waits for every step before it
    assert not any(t.startswith("python.") for t in tools)
    box = structured(looked)
    assert [s["name"] for s in box["materials"]] == ["Box_BrushedMetal"]
    assert [m["type"] for m in box["modifiers"]] == ["BEVEL"]
    assert exported.isError is False, exported.content
    [resource] = [c for c in exported.content if isinstance(c, types.EmbeddedResource)]
    assert isinstance(resource.resource, types.BlobResourceContents)
    glb = tmp_path / "words.glb"
    glb.write_bytes(base64.b64decode(resource.resource.blob))
    opened, _ = await script_result(
        "import bpy, json\n"
        "bpy.ops.wm.read_factory_settings(use_empty=True)\n"
        f"bpy.ops.import_scene.gltf(filepath={str(glb)!r})\n"
        "box = bpy.data.objects['Box']\n"
        "print('RESULT ' + json.dumps({'vertices': len(box.data.vertices), "
        "'materials': [m.name for m in box.data.materials], "
        "'uv': len(box.data.uv_layers)}))\n"
    )
    assert opened["vertices"] > 8, opened  # bevelled: more than a cube's corners
    assert opened["materials"] == ["Box_BrushedMetal"] and opened["uv"] >= 1, opened


async def test_shader_plan_when_it_names_a_node_blender_lacks_is_refused_before_running(
    gateway: str,
) -> None:
    plan = {
        "request_id": "osl-node",
        "operations": [
            _op("op00", "shader.create", {"material": "M"}, None),
            _op("op01", "shader.add_node",
                {"material": "M", "node_id": "osl", "bl_idname": "ShaderNodeScript"}, "op00"),
        ],
    }  # fmt: skip
    async with door(gateway) as session:
        ran = await session.call_tool("run", {"scene_id": "osl", "plan": plan})
    result = structured(ran)
    assert result["status"] == "failed" and result["receipts"] == [], json.dumps(result)[:2000]
    assert "bl_idname" in json.dumps(result["failure"])


async def test_image_texture_when_its_image_came_packed_in_an_import_is_used(
    gateway: str,
) -> None:
    data = base64.b64encode(glb_with_image(solid_png(4, 4, (200, 180, 90)))).decode()
    imported = {"scene_id": "img", "filename": "t.glb", "data": data, "collection": "Props"}
    plan = {
        "request_id": "image-texture",
        "operations": [
            _op("op00", "shader.create", {"material": "Decal"}, None),
            _op("op01", "shader.add_node",
                {"material": "Decal", "node_id": "img", "bl_idname": "ShaderNodeTexImage"},
                "op00"),
            _op("op02", "shader.set_property",
                {"material": "Decal", "node_id": "img", "property": "image",
                 "value": "Scratches"}, "op01"),
            _op("op03", "shader.link",
                {"material": "Decal", "from_node": "img", "from_socket": "Color",
                 "to_node": "principled", "to_socket": "Base Color"}, "op02"),
        ],
    }  # fmt: skip
    async with door(gateway) as session:
        first = await session.call_tool("import_asset", imported)
        ran = await session.call_tool("run", {"scene_id": "img", "plan": plan})
    assert structured(first)["status"] == "completed", structured(first)
    result = structured(ran)
    assert result["status"] == "completed", json.dumps(result)[:3000]
    assert result["receipts"][2]["result"]["value"] == "Scratches"
