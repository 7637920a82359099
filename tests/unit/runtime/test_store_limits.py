"""JetStream's store limits: from BLENDMESH_MAX_FILE_STORE and the disk, with headroom."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

import pytest
from nats.js.errors import ServiceUnavailableError

from services.runtime.server.embedded import render_config
from services.runtime.service.settings import SettingsError
from services.runtime.service.store_limits import (
    MIB,
    MIN_HEADROOM,
    StoreLimits,
    out_of_room,
    parse_size,
    store_full,
    store_limits,
)


@pytest.mark.parametrize(
    ("raw", "size"),
    [("1048576", MIB), ("512M", 512 * MIB), ("2GiB", 2048 * MIB), ("64mb", 64 * MIB)],
)
def test_size_when_written_with_a_unit_reads_bytes(raw: str, size: int) -> None:
    assert parse_size(raw) == size


@pytest.mark.parametrize("raw", ["lots", "-5M", "1.5G", "12T", "M"])
def test_size_when_not_a_size_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_MAX_FILE_STORE"):
        parse_size(raw)


def test_limits_when_configured_below_the_disk_use_the_setting(tmp_path: Path) -> None:
    limits = store_limits(tmp_path / "store", {"BLENDMESH_MAX_FILE_STORE": "16M"})
    assert (limits.file_store, limits.configured) == (16 * MIB, 16 * MIB)


def test_limits_when_configured_above_the_disk_keep_headroom(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    limits = store_limits(tmp_path / "store", {"BLENDMESH_MAX_FILE_STORE": f"{free * 4}"})
    assert limits.file_store <= free - MIN_HEADROOM
    assert "less headroom" in limits.report()


def test_limits_when_configured_too_small_for_the_streams_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="under the 8 MiB"):
        store_limits(tmp_path, {"BLENDMESH_MAX_FILE_STORE": "1M"})


def test_config_when_limits_given_bounds_the_jetstream_block(tmp_path: Path) -> None:
    conf = render_config(tmp_path, tmp_path, limits=StoreLimits(file_store=9 * MIB))
    block = conf[conf.index("jetstream {") : conf.index("}")]
    assert f"max_file_store: {9 * MIB}" in block and "max_memory_store:" in block
    assert "max_file_store" not in render_config(tmp_path, tmp_path)


def test_store_full_when_refused_deep_in_a_chain_is_seen_and_a_cycle_ends() -> None:
    full = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    outer = RuntimeError("the step could not be recorded")
    outer.__cause__ = ValueError("while storing")
    outer.__cause__.__context__ = full
    assert store_full(full) and store_full(outer)
    other = ServiceUnavailableError(code=503, err_code=10008, description="no leader")
    looped = RuntimeError("a")
    looped.__context__ = RuntimeError("b")
    looped.__context__.__context__ = looped  # a cycle: followed a few links, then given up
    assert not store_full(other) and not store_full(looped)


def test_out_of_room_when_the_disk_or_the_store_is_full_and_not_otherwise() -> None:
    full = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    wrapped = RuntimeError("could not save")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert out_of_room(full) and out_of_room(wrapped)
    assert out_of_room(sqlite3.OperationalError("database or disk is full"))
    assert not out_of_room(sqlite3.OperationalError("database is locked"))
    assert not out_of_room(OSError(errno.EACCES, "Permission denied"))
    assert not out_of_room(TimeoutError())
