"""``latest``: the last event of a kind in a run's events, the one search every door shares."""

from __future__ import annotations

from contracts.fold import latest


class _Asked:
    def __init__(self, n: int) -> None:
        self.n = n


class _Other:
    pass


def test_latest_when_several_of_a_kind_returns_the_last() -> None:
    events = [_Asked(1), _Other(), _Asked(2), _Other()]
    found = latest(events, _Asked)
    assert found is not None and found.n == 2


def test_latest_when_none_of_the_kind_returns_none() -> None:
    assert latest([_Other(), _Other()], _Asked) is None
    assert latest([], _Asked) is None
