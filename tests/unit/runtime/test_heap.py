"""settle leaves what is alive out of the collector's passes; thaw puts it back, and a
frozen object is still freed once nothing refers to it."""

from __future__ import annotations

import gc
import weakref

from services.runtime.service import heap


class Held:
    pass


def test_settle_when_thawed_again_leaves_nothing_frozen() -> None:
    gc.unfreeze()
    held = Held()
    heap.settle()
    try:
        assert gc.get_freeze_count() > 0
        gone = weakref.ref(held)
        del held
        assert gone() is None  # frozen, yet freed when its last reference goes
    finally:
        heap.thaw()
    assert gc.get_freeze_count() == 0
