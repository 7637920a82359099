"""Each user's share of a door, on a clock the test moves."""

from __future__ import annotations

import pytest

from services.doors.core.fairness import (
    BYTES_FLOOD_FACTOR,
    FLOOD_FACTOR,
    MAX_USERS,
    SETTINGS,
    Fairness,
    FairnessSettingError,
    Limits,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fairness(**limits: int) -> tuple[Fairness, Clock]:
    clock = Clock()
    return Fairness(Limits(**limits), clock), clock


def test_admit_when_a_burst_is_spent_refuses_naming_the_limit_and_when_to_retry() -> None:
    door, clock = fairness(requests_per_second=10, burst=5, in_flight=100)
    assert [door.admit("bob", 10) for _ in range(5)] == [None] * 5
    refusal = door.admit("bob", 10)
    assert refusal is not None
    assert "more than 10 requests a second" in refusal.message
    assert SETTINGS["requests_per_second"] in refusal.message
    assert refusal.retry_after == pytest.approx(0.1)
    clock.now += 0.1
    assert door.admit("bob", 10) is None  # refilled


def test_admit_when_one_user_floods_another_is_not_touched() -> None:
    door, _ = fairness(requests_per_second=10, burst=5, in_flight=100)
    for _ in range(50):
        door.admit("mallory", 10)
    assert door.admit("bob", 10) is None


def test_admit_when_bytes_run_out_refuses_and_gives_the_request_token_back() -> None:
    door, clock = fairness(bytes_per_second=1000, bytes_burst=1000, burst=2, in_flight=100)
    assert door.admit("bob", 900) is None
    refusal = door.admit("bob", 900)
    assert refusal is not None and "more than 1,000 bytes a second" in refusal.message
    assert SETTINGS["bytes_per_second"] in refusal.message
    clock.now += 0.8
    assert door.admit("bob", 900) is None  # the refused one did not spend a request


def test_admit_when_larger_than_the_burst_still_passes_once_the_bucket_is_full() -> None:
    door, _ = fairness(bytes_per_second=100, bytes_burst=100)
    assert door.admit("bob", 10_000) is None


def test_admit_when_too_many_at_once_refuses_until_one_is_done() -> None:
    door, _ = fairness(in_flight=2)
    assert door.admit("bob", 1) is None and door.admit("bob", 1) is None
    refusal = door.admit("bob", 1)
    assert refusal is not None and "2 requests under way" in refusal.message
    door.done("bob")
    assert door.admit("bob", 1) is None


def test_users_when_more_than_the_table_holds_forget_idle_ones_first() -> None:
    door, _ = fairness(in_flight=5)
    assert door.admit("busy", 1) is None
    for i in range(MAX_USERS + 10):
        door.admit(f"u{i}", 1)
        door.done(f"u{i}")
    assert len(door._shares) <= MAX_USERS
    assert "busy" in door._shares  # a user with a request under way is kept


@pytest.mark.parametrize("raw", ["0", "-1", "ten", "1.5"])
def test_limits_when_a_setting_is_unusable_names_it(raw: str) -> None:
    with pytest.raises(FairnessSettingError, match=SETTINGS["burst"]):
        Limits.from_env({SETTINGS["burst"]: raw})


def test_limits_when_set_read_them_and_default_the_rest() -> None:
    limits = Limits.from_env({SETTINGS["in_flight"]: "3"})
    assert limits.in_flight == 3 and limits.burst == Limits().burst


def test_admit_when_refused_past_the_refusals_a_second_stops_telling() -> None:
    door, clock = fairness(requests_per_second=10, burst=2, in_flight=100)
    assert door.admit("mallory", 1) is None and door.admit("mallory", 1) is None
    refusals = [door.admit("mallory", 1) for _ in range(5)]
    assert all(r is not None for r in refusals)
    assert [r.told for r in refusals if r is not None] == [True, True, False, False, False]
    clock.now += 0.1
    again = door.admit("mallory", 1)
    assert again is None  # a request token came back: served, not refused


def test_admit_when_unanswered_requests_pass_many_shares_says_the_login_floods() -> None:
    door, _ = fairness(requests_per_second=10, burst=2, in_flight=100)
    refusals = [door.admit("mallory", 1) for _ in range(2 + 2 + 2 * FLOOD_FACTOR + 1)]
    flags = [r.flooding for r in refusals if r is not None]
    assert flags[-1] is True and flags.count(True) == 1
    assert door.admit("bob", 1) is None  # another login is untouched


def test_admit_when_unanswered_bytes_pass_a_few_shares_says_the_login_floods() -> None:
    # Few requests, each large: what fills a door's connection is bytes, not their count.
    door, _ = fairness(requests_per_second=100, burst=100, bytes_per_second=1000,
                       bytes_burst=1000, in_flight=100)  # fmt: skip
    assert door.admit("mallory", 1000) is None
    refusals = [door.admit("mallory", 1000) for _ in range(100 + 2 * BYTES_FLOOD_FACTOR)]
    flags = [r.flooding for r in refusals if r is not None]
    untold = flags[100:]  # the first 100 were told why
    assert untold[:BYTES_FLOOD_FACTOR] == [False] * BYTES_FLOOD_FACTOR
    assert untold[BYTES_FLOOD_FACTOR] is True
    assert len(refusals) < FLOOD_FACTOR * 100  # long before their count would say so
    assert door.admit("bob", 1000) is None
