"""``blendmesh mcp`` over stdio, as a host starts it, with the official SDK's client: the
prompts, an asset import, one object in depth and a view as an MCP image, on the mesh the
e2e tests share, as a user of the test's own."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import mcp.types as types

from tests.e2e.test_mcp import door
from tests.support.asset_files import OBJ
from tests.support.joined_mesh import Joined
from tests.support.mcp_plans import error_type, structured


async def test_mcp_stdio_when_asset_imported_inspects_and_views_it(
    tmp_path: Path, joined: Joined
) -> None:
    data = base64.b64encode(OBJ).decode()
    room = joined.scene("room")
    async with door(tmp_path, joined=joined) as session:
        prompts = await session.list_prompts()
        imported = await session.call_tool(
            "import_asset",
            {"scene_id": room, "filename": "wall.obj", "data": data, "collection": "Walls"},
        )
        inspected = await session.call_tool("inspect_object", {"scene_id": room, "name": "Quad"})
        viewed = await session.call_tool(
            "render_view", {"scene_id": room, "width": 64, "height": 80, "elevation": 90}
        )
        refused = await session.call_tool(
            "import_asset",
            {"scene_id": room, "filename": "wall.obj", "data": "%%%", "collection": "Walls"},
        )
    assert {p.name for p in prompts.prompts} == {"block_out_room", "light_product_shot"}
    assert structured(imported)["status"] == "completed", imported.content
    assert structured(inspected)["collections"] == ["Walls"]
    [image] = [c for c in viewed.content if isinstance(c, types.ImageContent)]
    assert struct.unpack(">II", base64.b64decode(image.data)[16:24]) == (64, 80)
    assert error_type(refused) == "ValidationError"
    assert "base64" in structured(refused)["error"]["message"]
