"""Policy profiles: the default lets safe writes run unasked (docs/adr/0020); the
"approve-side-effects" profile asks for every side effect unless the allowlist permits it,
as spec 002 §6 says."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from contracts.events import ApprovalRequested, Approved, PolicyDecided
from services.policy.cedar import (
    BUILTIN_DIR,
    PROFILES,
    CedarPolicy,
    PolicyLoadError,
    policy_folder,
)
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from tests.unit.policy.test_policy_approvals import resolve
from tests.unit.test_handlers import History, plan_event, policy, requested

SIDE_EFFECTS = CedarPolicy.load(PROFILES["approve-side-effects"])


def asking(**kw: Any) -> PolicyHandlers:
    """Policy handlers on the approve-side-effects profile."""
    return replace(policy(**kw), engine=SIDE_EFFECTS)


async def test_default_profile_when_safe_write_runs_unasked() -> None:
    decided, approved = await policy().on_planned(plan_event("object.create"))
    assert isinstance(decided, PolicyDecided) and decided.decisions[0].mode == "allow"
    assert isinstance(approved, Approved)


@pytest.mark.clause("002-§policy.3")
async def test_side_effects_profile_when_safe_write_asks_a_person() -> None:
    handlers = asking()
    decided, asked = await handlers.on_planned(plan_event("object.create", args={"name": "A"}))
    assert isinstance(decided, PolicyDecided) and isinstance(asked, ApprovalRequested)
    (verdict,) = decided.decisions
    assert verdict.mode == "require_approval"
    assert verdict.policy_ids == ["blendmesh.side-effects.v1#approve-safe-write"]
    assert decided.policy_set == "blendmesh.side-effects.v1"


async def test_side_effects_profile_when_read_only_or_unknown_allows_or_denies() -> None:
    decided, approved = await asking().on_planned(plan_event("scene.snapshot"))
    assert isinstance(decided, PolicyDecided) and isinstance(approved, Approved)
    decided, *_ = await asking().on_planned(plan_event("object.summon"))
    assert isinstance(decided, PolicyDecided) and decided.decisions[0].mode == "deny"


@pytest.mark.clause("002-§policy.3")
async def test_side_effects_profile_when_allowlisted_runs_unasked() -> None:
    """002 §6: approval for side effects unless the allowlist explicitly permits them."""
    history = History()
    handlers = asking(history=history, allowlist=MemoryAllowlist())
    planned = plan_event("object.create", args={"name": "A"})
    _, asked = await handlers.on_planned(planned)
    assert isinstance(asked, ApprovalRequested)
    history.events = [requested(), planned, asked]
    (first,) = await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    assert isinstance(first, Approved)
    decided, approved = await handlers.on_planned(plan_event("object.create", args={"name": "B"}))
    assert isinstance(decided, PolicyDecided) and isinstance(approved, Approved)
    assert decided.decisions[0].policy_ids[0].startswith("allowlist#")


def test_policy_folder_when_nothing_set_is_the_default_rules() -> None:
    assert policy_folder(None, None) == policy_folder(None, "default") == BUILTIN_DIR


def test_policy_folder_when_own_dir_set_is_that_dir(tmp_path: Path) -> None:
    assert policy_folder(tmp_path, None) == tmp_path


def test_policy_folder_when_profile_unknown_names_it_and_the_choices() -> None:
    with pytest.raises(PolicyLoadError, match="'ask-nobody' is not a policy profile; use one of"):
        policy_folder(None, "ask-nobody")


def test_policy_folder_when_dir_and_profile_both_set_refuses(tmp_path: Path) -> None:
    with pytest.raises(PolicyLoadError, match="set one"):
        policy_folder(tmp_path, "approve-side-effects")
