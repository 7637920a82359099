"""A .blend file's blocks and its SDNA, read without Blender.

Opening a file in Blender reads every library it links, so what a file refers to outside
itself has to be judged before it is opened (``references``). A .blend is a header, then
blocks (a code such as ``LI`` for a library or ``IM`` for an image, the struct the block
holds as an index into the file's SDNA, then the bytes), and last the SDNA itself: the
name, type and size of every field of every struct, which says where a field sits in this
file whatever Blender version wrote it. Only the blocks a caller keeps are held in memory.

A compressed file is inflated as it is read, never whole, and no further than
``MAX_UNPACKED_BYTES`` (``BLENDMESH_MAX_UNPACKED_BYTES``): a 214 KB zstd file can hold
4 GiB, which Blender would inflate into memory when it opens the file. The blocks are
counted before each is read or skipped, so a bomb is refused after at most that many bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import re
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import zstandard

from contracts.errors import BlendmeshError
from services.bridge.budget.budget import BudgetSettingError

_ZSTD = b"\x28\xb5\x2f\xfd"
_GZIP = b"\x1f\x8b"
KEEP_BYTES = 64 * 1024  # of a kept block; the structs read here are a few KiB
MAX_SDNA_BYTES = 16 * 1024 * 1024  # Blender 5.0 writes about 130 KiB
_DIMENSIONS = re.compile(r"\[(\d+)\]")
_INTEGERS = {1: "b", 2: "h", 4: "i", 8: "q"}  # struct formats by size, signed
UNPACKED_SETTING = "BLENDMESH_MAX_UNPACKED_BYTES"
DEFAULT_MAX_UNPACKED_BYTES = 1024 * 1024 * 1024  # 16 times the largest upload


class Unreadable(BlendmeshError):
    """Not a .blend file whose blocks can be read (truncated, not one, corrupt)."""


class TooLarge(Unreadable):
    """A .blend whose blocks add up to more than the bridge opens; the message names the
    limit and the setting that raises it."""


def max_unpacked(env: Mapping[str, str]) -> int:
    """The most bytes a .blend may hold once decompressed (``BLENDMESH_MAX_UNPACKED_BYTES``);
    BudgetSettingError naming the setting when it is not a whole number of at least 1 MiB."""
    raw = (env.get(UNPACKED_SETTING) or "").strip()
    if not raw:
        return DEFAULT_MAX_UNPACKED_BYTES
    if not raw.isdigit() or int(raw) < 1024 * 1024:
        raise BudgetSettingError(
            f"{UNPACKED_SETTING}={raw!r} must be a whole number of bytes, 1 MiB or more"
        )
    return int(raw)


MAX_UNPACKED_BYTES = max_unpacked(os.environ)


@dataclass(frozen=True)
class Block:
    """One kept block: its code, the address it had when written (pointers name it), the
    index of its struct in the SDNA, and its first ``KEEP_BYTES`` bytes."""

    code: bytes
    old: int
    sdna: int
    data: bytes


@dataclass(frozen=True)
class Field:
    """Where a field sits in its struct, its size in bytes, its type's name, and whether
    it is a pointer (then ``size`` counts pointers of the file's size)."""

    offset: int
    size: int
    type: str
    pointer: bool


class Sdna:
    """The file's own description of its structs: where each field sits."""

    def __init__(self, raw: bytes, pointer_size: int, endian: str) -> None:
        self.pointer_size, self.endian = pointer_size, endian
        try:
            self._parse(raw)
        except (struct.error, ValueError, IndexError, UnicodeDecodeError) as err:
            raise Unreadable(f"its SDNA cannot be read ({err})") from None

    def _parse(self, raw: bytes) -> None:
        if raw[:8] != b"SDNANAME":
            raise ValueError("no SDNA")
        names, at = self._strings(raw, 8)
        types, at = self._strings(raw, self._expect(raw, at, b"TYPE"))
        at = self._expect(raw, at, b"TLEN")
        sizes = struct.unpack_from(f"{self.endian}{len(types)}h", raw, at)
        at = self._expect(raw, (at + 2 * len(types) + 3) & ~3, b"STRC")
        (count,) = struct.unpack_from(f"{self.endian}i", raw, at)
        at += 4
        self.structs: list[str] = []
        self.fields: dict[str, dict[str, Field]] = {}
        for _ in range(count):
            kind, nfields = struct.unpack_from(f"{self.endian}hh", raw, at)
            pairs = struct.unpack_from(f"{self.endian}{2 * nfields}h", raw, at + 4)
            at += 4 + 4 * nfields
            offset, fields = 0, {}
            for type_index, name_index in zip(pairs[::2], pairs[1::2], strict=True):
                name, type_name = names[name_index], types[type_index]
                pointer = name.startswith(("*", "(*"))
                count_ = math.prod(int(n) for n in _DIMENSIONS.findall(name))
                size = (self.pointer_size if pointer else sizes[type_index]) * count_
                bare = name.lstrip("*(").split(")")[0].split("[")[0]
                fields[bare] = Field(offset, size, type_name, pointer)
                offset += size
            self.structs.append(types[kind])
            self.fields[types[kind]] = fields

    @staticmethod
    def _expect(raw: bytes, at: int, tag: bytes) -> int:
        if raw[at : at + 4] != tag:
            raise ValueError(f"no {tag.decode()} at {at}")
        return at + 4

    def _strings(self, raw: bytes, at: int) -> tuple[list[str], int]:
        (count,) = struct.unpack_from(f"{self.endian}i", raw, at)
        at += 4
        found = []
        for _ in range(count):
            end = raw.index(b"\0", at)
            found.append(raw[at:end].decode("utf-8"))
            at = end + 1
        return found, (at + 3) & ~3

    def struct_of(self, block: Block) -> str:
        return self.structs[block.sdna] if 0 <= block.sdna < len(self.structs) else ""

    def field(self, struct_name: str, path: str) -> Field | None:
        """``path`` is dotted through nested structs (``id.name``); None when absent."""
        offset, found = 0, None
        for part in path.split("."):
            found = self.fields.get(struct_name, {}).get(part)
            if found is None:
                return None
            offset += found.offset
            struct_name = found.type
        assert found is not None
        return Field(offset, found.size, found.type, found.pointer)

    def _located(self, block: Block, path: str) -> Field | None:
        found = self.field(self.struct_of(block), path)
        if found is None or found.offset + found.size > len(block.data):
            return None
        return found

    def text(self, block: Block, path: str) -> str | None:
        """A char array field up to its first NUL; None when the block has none."""
        found = self._located(block, path)
        if found is None or found.pointer:
            return None
        raw = block.data[found.offset : found.offset + found.size]
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def number(self, block: Block, path: str) -> int | None:
        """An integer or pointer field (a pointer as the address it had when written);
        None when the block has none."""
        found = self._located(block, path)
        kind = _INTEGERS.get(found.size) if found is not None else None
        if found is None or kind is None:
            return None
        kind = kind.upper() if found.pointer else kind
        return int(struct.unpack_from(f"{self.endian}{kind}", block.data, found.offset)[0])


class _Stream(Protocol):
    """What is read: the file itself, or what its zstd or gzip compression holds."""

    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...


def _decompressed(raw: BinaryIO, files: contextlib.ExitStack) -> _Stream:
    magic = raw.read(4)
    raw.seek(0)
    if magic == _ZSTD:  # Blender writes frames of its own: read across them
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return files.enter_context(reader)
    if magic[:2] == _GZIP:  # written before Blender 3.0
        return files.enter_context(gzip.GzipFile(fileobj=raw))
    return raw


@dataclass(frozen=True)
class _Layout:
    """How a block header is laid out: its struct and where code, length, address and
    SDNA index sit in it; the pointer size and byte order of the whole file."""

    header: struct.Struct
    code: int
    length: int
    old: int
    sdna: int
    pointer: int
    endian: str


def _layout(stream: _Stream) -> _Layout:
    """From the file header: ``BLENDER-v405`` before Blender 5.0 (pointer size ``-`` 8 or
    ``_`` 4, ``v`` little or ``V`` big endian), ``BLENDER17-01v0500`` since (header size,
    block format 01: 64-bit little endian, lengths of 64 bits)."""
    head = stream.read(12)
    if head[:7] != b"BLENDER":
        raise Unreadable("it does not start with BLENDER")
    if head[7:9].isdigit():
        if head[9:12] != b"-01":
            raise Unreadable(f"its block format {head[7:12]!r} is unknown")
        stream.read(int(head[7:9]) - 12)
        return _Layout(struct.Struct("<4siQqq"), 0, 3, 2, 1, 8, "<")
    pointer = {b"_": 4, b"-": 8}.get(head[7:8])
    endian = {b"v": "<", b"V": ">"}.get(head[8:9])
    if pointer is None or endian is None:
        raise Unreadable(f"its header {head!r} is unknown")
    header = struct.Struct(f"{endian}4si{'I' if pointer == 4 else 'Q'}ii")
    return _Layout(header, 0, 1, 2, 3, pointer, endian)


def _too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"it holds more than {limit:,} bytes once decompressed, more than blendmesh opens "
        f"({UNPACKED_SETTING} raises it); save it again from Blender, or split the scene"
    )


def read_blocks(
    path: str, keep: Callable[[bytes, int], bool], limit: int | None = None
) -> tuple[list[Block], Sdna]:
    """The blocks for which ``keep(code, length)`` is true, in file order, and the SDNA;
    ``keep`` is asked about every block in turn. Raises Unreadable, and TooLarge once the
    blocks add up to more than ``limit`` bytes (``MAX_UNPACKED_BYTES`` by default)."""
    limit = MAX_UNPACKED_BYTES if limit is None else limit
    kept: list[Block] = []
    try:
        with contextlib.ExitStack() as files:
            stream = _decompressed(files.enter_context(open(path, "rb")), files)
            layout = _layout(stream)
            seen = 0
            while True:
                seen += layout.header.size
                raw = stream.read(layout.header.size)
                if len(raw) < layout.header.size:
                    raise Unreadable("it ends before its last block (truncated?)")
                fields = layout.header.unpack(raw)
                code, length = fields[layout.code], fields[layout.length]
                if length < 0:
                    raise Unreadable("a block has a negative length")
                seen += length
                if seen > limit:  # before the block is read or skipped: inflated so far only
                    raise _too_large(limit)
                if code == b"ENDB":
                    raise Unreadable("it has no SDNA")
                if code == b"DNA1":
                    if length > MAX_SDNA_BYTES:
                        raise Unreadable(f"its SDNA claims {length} bytes")
                    return kept, Sdna(stream.read(length), layout.pointer, layout.endian)
                if keep(code, length):
                    data = stream.read(min(length, KEEP_BYTES))
                    kept.append(Block(code, fields[layout.old], fields[layout.sdna], data))
                    length -= len(data)
                stream.seek(length, 1)
    except (zstandard.ZstdError, zlib.error, gzip.BadGzipFile, EOFError) as err:
        raise Unreadable(f"it cannot be decompressed ({err})") from None
    except OSError as err:  # its words without the path
        raise Unreadable(f"it cannot be read ({err.strerror})") from None
