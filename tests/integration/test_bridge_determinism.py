"""Spec 001 on the real bridge: determinism metadata under the spec's names on the wire,
stable handles from non-idempotent tools, and the sandbox's pinned seed and environment."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.python_steps import code_sha256
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]

shared_bridge, bridge = bridge_fixtures()


async def names(bridge: BridgeProcess) -> set[str]:
    data = (await ok(bridge, "scene.snapshot")).data or {}
    return {o["name"] for o in data["objects"]}


@pytest.mark.clause("001-§determinism.1", "001-§return.1")
async def test_tool_results_when_tools_answer_carry_their_declared_class(
    bridge: BridgeProcess,
) -> None:
    read = await ok(bridge, "scene.snapshot")
    made = await ok(bridge, "object.create", primitive="cube", name="Box")
    assert (read.determinism_class, made.determinism_class) == ("deterministic", "deterministic")
    missing = await call(bridge, "object.transform", name="Ghost", location=[1, 1, 1])
    assert missing.error_code == "not_found" and missing.determinism_class == "deterministic"
    wrong = await call(bridge, "object.create", primitive="dodecahedron")
    assert wrong.error_code == "invalid_input" and wrong.determinism_class == "deterministic"


@pytest.mark.clause("001-§idempotence.3", "001-§snapshots.1")
@pytest.mark.parametrize(
    ("tool", "args", "handle"),
    [
        ("object.create", {"primitive": "cube", "name": "Box"}, "name"),
        ("light.create", {"kind": "point", "name": "Lamp"}, "name"),
    ],
)
async def test_non_idempotent_tool_when_repeated_returns_a_stable_handle_not_a_renamed_copy(
    bridge: BridgeProcess, tool: str, args: dict[str, Any], handle: str
) -> None:
    first = await ok(bridge, tool, **args)
    assert first.data is not None and first.data[handle] == args["name"]
    # The handle resolves: the thing it names can be changed through it.
    await ok(bridge, "object.transform", name=first.data[handle], location=[1, 2, 3])
    again = await call(bridge, tool, **args)
    # Repeating does not make "Box.001" behind the caller's back: the handle stays the
    # one name for the one object.
    assert again.error_code == "conflict" and not again.mutated
    assert {n for n in await names(bridge) if n.startswith(args["name"])} == {args["name"]}


@pytest.mark.clause("001-§idempotence.3")
async def test_non_idempotent_modifier_add_when_repeated_keeps_its_handle(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    added = await ok(bridge, "modifier.add", object="Box", type="BEVEL")
    assert added.data is not None and added.data["name"] == "Bevel"
    again = await call(bridge, "modifier.add", object="Box", type="BEVEL")
    assert again.error_code == "conflict"


@pytest.mark.clause("000-§executor-guarantees.3")
async def test_trusted_step_when_run_twice_draws_the_same_numbers_in_a_pinned_environment(
    bridge: BridgeProcess,
) -> None:
    code = (
        "import random, sys, time, os\n"
        "print(random.random(), sys.flags.hash_randomization, os.environ.get('PYTHONHASHSEED'),"
        " time.tzname[0])"
    )
    outputs = []
    for _ in range(2):
        result = await call(bridge, "python.trusted", code=code, code_sha256=code_sha256(code))
        if result.error_code == "capability_missing":
            pytest.skip(f"no OS sandbox here: {result.message}")
        assert result.ok and result.data is not None, result
        assert result.determinism_class == "nondeterministic"  # the clock is not pinned
        outputs.append(result.data["output"])
    assert outputs[0] == outputs[1]
    drawn, randomized, hash_seed, zone = outputs[0].split()
    assert 0 <= float(drawn) < 1 and (randomized, hash_seed, zone) == ("0", "0", "UTC")
