"""Who may read a scene's change lists and review it, and what a revision number is
(services/doors/core/reviews.py): the rules alone, without a mesh."""

from __future__ import annotations

import pytest

from services.doors.core.reviews import (
    MAX_REVISION,
    NoRevision,
    check_revision,
    may_read_changes,
    may_review,
)


@pytest.mark.parametrize(
    ("user", "owner", "approvers", "allowed"),
    [
        ("ana", "ana", frozenset(), True),
        ("lee", "ana", frozenset({"lee"}), True),
        ("bob", "ana", frozenset({"lee"}), False),
        ("ana", "", frozenset({"ana"}), False),  # a scene nobody owns is nobody's to review
        ("", "", frozenset(), False),
    ],
)
def test_may_review_when_asked_allows_the_owner_and_approvers_only(
    user: str, owner: str, approvers: frozenset[str], allowed: bool
) -> None:
    assert may_review(user, owner, approvers) is allowed


@pytest.mark.parametrize(
    ("role", "reviews", "reads"),
    [
        ("lead", True, True),
        ("supervisor", True, True),
        ("artist", False, True),
        ("viewer", False, True),
        (None, False, False),
    ],
)
def test_a_project_role_when_asked_reviews_as_a_lead_and_reads_as_a_member(
    role: str | None, reviews: bool, reads: bool
) -> None:
    assert may_review("ben", "lea", frozenset(), role) is reviews
    assert may_read_changes("ben", "lea", frozenset(), role) is reads
    assert may_read_changes("ben", "", frozenset(), "lead") is False  # nobody's scene


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (0, "revisions count from 1"),
        (-4, "revisions count from 1"),
        (MAX_REVISION, "revisions count from 1"),
        ("3", "give a whole number"),
        (True, "give a whole number"),
        (2.0, "give a whole number"),
        (None, "give a whole number"),
    ],
)
def test_check_revision_when_not_a_revision_number_says_what_one_is(
    value: object, said: str
) -> None:
    with pytest.raises(NoRevision, match=said):
        check_revision(value, "revision")


def test_check_revision_when_in_range_is_the_number() -> None:
    assert check_revision(1, "revision") == 1
    assert check_revision(MAX_REVISION - 1, "revision") == MAX_REVISION - 1
