"""``blendmesh import-asset``, ``inspect`` and ``view`` as a user runs them: each runs one
checked, audited operation on the mesh (the ``blendmesh up`` the e2e tests share, joined
as a user of the test's own); hostile files are refused with exit 2 before any mesh
starts."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from contracts import views
from services.doors.cli import args as cli_args
from tests.e2e.test_cli import blendmesh
from tests.support.asset_files import glb, gltf_document
from tests.support.joined_mesh import Joined


def test_sides_when_parsed_match_the_contract() -> None:
    assert (cli_args.MIN_SIDE, cli_args.MAX_SIDE) == (views.MIN_SIDE, views.MAX_SIDE)
    assert cli_args.SHADINGS == views.SHADINGS and views.SHADINGS[0] == views.DEFAULT_SHADING


def test_import_inspect_and_view_when_run_in_turn_answer_the_asset(
    tmp_path: Path, joined: Joined
) -> None:
    home, env, s = joined.home, joined.env(), joined.scene("s")
    asset = tmp_path / "tri.glb"
    asset.write_bytes(glb())
    imported = blendmesh(
        home, "import-asset", str(asset), "--scene", s, "--collection", "Props", "--json", env=env
    )
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["receipts"][0]["result"]["objects"] == ["Tri"]
    inspected = blendmesh(home, "inspect", s, "Tri", env=env)
    assert inspected.returncode == 0, inspected.stderr
    detail = json.loads(inspected.stdout)
    assert detail["collections"] == ["Props"] and detail["mesh"]["triangles"] == 1
    png = tmp_path / "view.png"
    viewed = blendmesh(home, "view", s, "-o", str(png), "--width", "96", "--height", "64", env=env)
    assert viewed.returncode == 0, viewed.stderr
    assert struct.unpack(">II", png.read_bytes()[16:24]) == (96, 64)


def test_import_asset_when_gltf_points_outside_exits_2_before_a_mesh(tmp_path: Path) -> None:
    asset = tmp_path / "chair.glb"
    asset.write_bytes(glb(gltf_document(buffer_uri="/etc/passwd")))
    proc = blendmesh(tmp_path, "import-asset", str(asset), "--scene", "s", "--collection", "P")
    assert proc.returncode == 2, proc.stderr
    assert "refers to files outside it" in proc.stderr and "/etc/" not in proc.stderr
    assert not (tmp_path / "nats").exists()


def test_view_when_side_out_of_bounds_exits_2_naming_the_bounds(tmp_path: Path) -> None:
    proc = blendmesh(tmp_path, "view", "s", "-o", str(tmp_path / "v.png"), "--width", "4096")
    assert proc.returncode == 2
    assert "64 to 2048" in proc.stderr
