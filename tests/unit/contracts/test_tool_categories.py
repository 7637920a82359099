"""The catalog found on demand, on a small catalog: categories by prefix, the default
listing, search, and the categories a request's words call for in a model's prompt."""

from __future__ import annotations

from contracts import tool_categories as found
from contracts.tools import ToolCatalog, ToolSpec
from services.planner.model.prompt import catalog_section


def _spec(name: str, description: str) -> ToolSpec:
    schema = {"type": "object", "properties": {"object": {"type": "string"}}}
    return ToolSpec(
        name=name,
        description=description,
        safety_level="safe_write",
        input_schema=schema,
        output_schema={"type": "object", "properties": {"object": {"type": "string"}}},
    )


CATALOG = ToolCatalog(
    version="t",
    blender_version="5.0.1",
    tools=[
        _spec("object.create", "Add a primitive mesh object."),
        _spec("mesh.bevel", "Bevel the edges of a mesh object chosen by a rule."),
        _spec("mesh.extrude", "Extrude faces of a mesh along their normals."),
        _spec("uv.unwrap", "Unwrap a mesh's UVs by smart projection."),
        _spec("shader.add_node", "Add a shader node to a material's node tree."),
        _spec("sculpt.grab", "Grab a mesh's vertices."),
    ],
)


def test_category_of_when_prefix_unknown_is_other_so_the_tool_is_still_found() -> None:
    assert found.category_of("mesh.bevel") == "modelling"
    assert found.category_of("sculpt.grab") == found.OTHER
    assert [t["name"] for t in found.category_listing(CATALOG, found.OTHER)] == ["sculpt.grab"]


def test_default_listing_when_built_has_core_schemas_and_every_category_by_name() -> None:
    listing = found.default_listing(CATALOG)
    assert [t["name"] for t in listing["tools"]] == ["object.create"]
    assert "output_schema" not in listing["tools"][0]  # found on demand, not by default
    index = {c["category"]: c["tools"] for c in listing["categories"]}
    assert index["modelling"] == ["mesh.bevel", "mesh.extrude"]
    assert set(index) == {"objects", "modelling", "uv", "shading", found.OTHER}


def test_search_when_words_match_ranks_name_words_first_and_limits() -> None:
    hits = found.search(CATALOG, "bevel edges")
    assert hits[0]["name"] == "mesh.bevel" and hits[0]["output_schema"]
    assert found.search(CATALOG, "unwrapping")[0]["name"] == "uv.unwrap"  # by its stem
    assert found.search(CATALOG, "mesh", limit=1) == hits[:1]
    assert found.search(CATALOG, "mesh", category="uv")[0]["name"] == "uv.unwrap"
    assert found.search(CATALOG, "zzz nothing") == []


def test_search_when_query_is_huge_reads_only_its_first_words() -> None:
    assert found.search(CATALOG, "x " * 100_000 + "bevel") == []


def test_estimated_tokens_when_counted_is_json_characters_over_four() -> None:
    assert found.estimated_tokens({"a": "bcd"}) == 3  # {"a":"bcd"} is 11 characters


def test_needed_when_request_names_bevel_unwrap_and_metal_calls_three_categories() -> None:
    request = "bevel the edges, unwrap it and give it a brushed-metal shader"
    assert found.needed(request) >= {"modelling", "uv", "shading"}
    assert found.needed("add a cube named Box") == set()


def test_catalog_section_when_request_given_carries_only_the_categories_it_needs() -> None:
    text = catalog_section(CATALOG, "bevel the edges of Box")
    assert '"name":"mesh.bevel"' in text and '"name":"object.create"' in text
    assert '"name":"shader.add_node"' not in text
    assert "shader.add_node" in text  # by name, so the model knows it is there
    every = catalog_section(CATALOG)
    assert all(f'"name":"{t.name}"' in every for t in CATALOG.tools)
