"""What a .blend refers to outside itself, read from its blocks without Blender: files are
built here byte by byte in each layout Blender has written (before 5.0: 32 or 64-bit
pointers, either byte order; since: 64-bit lengths), with an SDNA of their own."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pytest
import zstandard

from services.bridge.blendfiles.blendfile import (
    DEFAULT_MAX_UNPACKED_BYTES,
    KEEP_BYTES,
    MAX_SDNA_BYTES,
    UNPACKED_SETTING,
    TooLarge,
    Unreadable,
    max_unpacked,
    read_blocks,
)
from services.bridge.blendfiles.references import Reference, describe, references
from services.bridge.budget.budget import BudgetSettingError

# (file header, block header format with fields code, sdna, old, len, pointer size)
LAYOUTS = {
    "5.0": (b"BLENDER17-01v0500", "<", 8),
    "4.5 64-bit": (b"BLENDER-v405", "<", 8),
    "2.7 big endian": (b"BLENDER-V279", ">", 8),
    "2.4 32-bit": (b"BLENDER_v249", "<", 4),
}
SIZES = {"char": 1, "short": 2, "int": 4, "void": 0, "PackedFile": 0}
STRUCTS: dict[str, list[tuple[str, str]]] = {
    "ID": [("void", "*next"), ("char", "name[66]")],
    "ListBase": [("void", "*first"), ("void", "*last")],
    "Library": [("ID", "id"), ("char", "name[1024]")],
    "Image": [
        ("ID", "id"), ("char", "name[1024]"), ("short", "source"), ("short", "_pad"),
        ("PackedFile", "*packedfile"), ("ListBase", "packedfiles"),
    ],
    "Text": [("ID", "id"), ("char", "*name")],
}  # fmt: skip


class Blend:
    """A .blend in one of LAYOUTS, block by block."""

    def __init__(self, layout: str) -> None:
        self.head, self.endian, self.pointer = LAYOUTS[layout]
        self.new = self.head[7:9].isdigit()
        self.blocks: list[bytes] = []
        self.index = list(STRUCTS)

    def _pointer(self, value: int) -> bytes:
        return struct.pack(f"{self.endian}{'Q' if self.pointer == 8 else 'I'}", value)

    def id(self, code: str, name: str) -> bytes:
        return self._pointer(0) + (code + name).encode().ljust(66, b"\0")

    def block(self, code: bytes, data: bytes, sdna: int = 0, old: int = 0) -> Blend:
        if self.new:
            head = struct.pack("<4siQqq", code, sdna, old, len(data), 1)
        else:
            kind = "Q" if self.pointer == 8 else "I"
            head = struct.pack(f"{self.endian}4si{kind}ii", code, len(data), old, sdna, 1)
        self.blocks.append(head + data)
        return self

    def library(self, name: str, path: str) -> Blend:
        data = self.id("LI", name) + path.encode().ljust(1024, b"\0")
        return self.block(b"LI\0\0", data, self.index.index("Library"))

    def image(
        self, name: str, path: str, source: int = 1, packed: int = 0, listed: int = 0
    ) -> Blend:
        data = self.id("IM", name) + path.encode().ljust(1024, b"\0")
        data += struct.pack(f"{self.endian}hh", source, 0) + self._pointer(packed)
        data += self._pointer(listed) + self._pointer(listed)
        return self.block(b"IM\0\0", data, self.index.index("Image"))

    def text(self, name: str, path_at: int) -> Blend:
        data = self.id("TX", name) + self._pointer(path_at)
        return self.block(b"TX\0\0", data, self.index.index("Text"))

    def size(self, kind: str) -> int:
        if kind in SIZES:
            return SIZES[kind]
        total = 0
        for type_name, name in STRUCTS[kind]:
            count = int(name.split("[")[1].rstrip("]")) if "[" in name else 1
            total += (self.pointer if name.startswith("*") else self.size(type_name)) * count
        return total

    def sdna(self) -> bytes:
        names = sorted({n for fields in STRUCTS.values() for _, n in fields})
        types = list(SIZES) + [t for t in STRUCTS if t not in SIZES]
        e = self.endian

        def strings(tag: bytes, items: list[str]) -> bytes:
            raw = (
                tag + struct.pack(f"{e}i", len(items)) + b"".join(i.encode() + b"\0" for i in items)
            )
            return raw.ljust((len(raw) + 3) & ~3, b"\0")

        sizes = [self.size(t) for t in types]
        tlen = b"TLEN" + struct.pack(f"{e}{len(types)}h", *sizes)
        tlen = tlen.ljust((len(tlen) + 3) & ~3, b"\0")
        strc = b"STRC" + struct.pack(f"{e}i", len(STRUCTS))
        for kind, fields in STRUCTS.items():
            strc += struct.pack(f"{e}hh", types.index(kind), len(fields))
            for type_name, name in fields:
                strc += struct.pack(f"{e}hh", types.index(type_name), names.index(name))
        return b"SDNA" + strings(b"NAME", names) + strings(b"TYPE", types) + tlen + strc

    def bytes(self, sdna: bytes | None = None) -> bytes:
        self.block(b"DNA1", self.sdna() if sdna is None else sdna).block(b"ENDB", b"")
        return self.head + b"".join(self.blocks)


def saved(tmp_path: Path, data: bytes, name: str = "scene.blend") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_references_when_library_linked_names_it_and_only_its_last_part(
    tmp_path: Path, layout: str
) -> None:
    blend = Blend(layout).library("bobprivate.blend", "/home/bob/scenes/bobprivate.blend")
    found = references(saved(tmp_path, blend.bytes()))
    assert found == [Reference("library", "bobprivate.blend", "bobprivate.blend")]
    assert str(found[0]) == "library 'bobprivate.blend' (bobprivate.blend)"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_references_when_image_is_a_file_names_it_and_packed_or_generated_are_fine(
    tmp_path: Path, layout: str
) -> None:
    blend = (
        Blend(layout)
        .image("Bark", "//textures\\bark.png")
        .image("Wood", "//wood.png", packed=0x10)  # packed before Blender 3.0
        .image("Tiles", "//tiles.png", listed=0x20)  # packed since, one file per view
        .image("Noise", "//noise.png", source=4)  # generated: no file behind it
        .image("Empty", "")
    )
    assert references(saved(tmp_path, blend.bytes())) == [Reference("image", "Bark", "bark.png")]


def test_references_when_text_has_a_path_names_the_last_part_of_it(tmp_path: Path) -> None:
    blend = Blend("5.0").text("Notes", 0x1234).block(b"DATA", b"C:\\bob\\notes.txt\0", old=0x1234)
    blend.text("Inline", 0).text("Elsewhere", 0x5678)  # its path's block is not beside it
    found = references(saved(tmp_path, blend.bytes()))
    assert found == [Reference("text", "Notes", "notes.txt"), Reference("text", "Elsewhere", "")]
    assert str(found[1]) == "text 'Elsewhere'"


def test_references_when_block_is_not_the_struct_its_code_says_refuses_it(tmp_path: Path) -> None:
    blend = Blend("5.0")
    blend.block(b"IM\0\0", blend.id("IM", "Odd") + b"\0" * 64, blend.index.index("Text"))
    assert references(saved(tmp_path, blend.bytes())) == [
        Reference("image", "Odd", "a block blendmesh cannot read")
    ]


def test_references_when_block_ends_before_its_path_refuses_it(tmp_path: Path) -> None:
    blend = Blend("5.0")
    blend.block(b"LI\0\0", blend.id("LI", "cut.blend"), blend.index.index("Library"))
    assert references(saved(tmp_path, blend.bytes())) == [
        Reference("library", "cut.blend", "a path blendmesh cannot read")
    ]


def test_references_when_compressed_reads_every_frame(tmp_path: Path) -> None:
    data = Blend("5.0").block(b"DATA", b"\0" * 300_000).library("lib.blend", "/x/lib.blend").bytes()
    compressor = zstandard.ZstdCompressor()
    frames = compressor.compress(data[:200_000]) + compressor.compress(data[200_000:])
    for name, packed in {"z.blend": frames, "g.blend": gzip.compress(data)}.items():
        found = references(saved(tmp_path, packed, name))
        assert found == [Reference("library", "lib.blend", "lib.blend")], name


def test_read_blocks_when_block_is_large_keeps_only_its_head(tmp_path: Path) -> None:
    blend = Blend("5.0").block(b"DATA", b"x" * (KEEP_BYTES + 10)).library("l", "/l.blend")
    blocks, _ = read_blocks(saved(tmp_path, blend.bytes()), lambda code, size: True)
    assert [(b.code, len(b.data)) for b in blocks] == [
        (b"DATA", KEEP_BYTES),
        (b"LI\0\0", 8 + 66 + 1024),  # the whole of a small one
    ]


def _negative_length() -> bytes:
    return b"BLENDER-v405" + struct.pack("<4siQii", b"DATA", -5, 0, 0, 1)


def _huge_sdna() -> bytes:
    return b"BLENDER17-01v0500" + struct.pack("<4siQqq", b"DNA1", 0, 0, MAX_SDNA_BYTES + 1, 1)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"PK\x03\x04 a zip", "it does not start with BLENDER"),
        (b"BLENDER?v405", "its header b'BLENDER?v405' is unknown"),
        (b"BLENDER17-02v0600", "its block format b'17-02' is unknown"),
        (Blend("5.0").head + struct.pack("<4siQqq", b"ENDB", 0, 0, 0, 0), "it has no SDNA"),
        (_negative_length(), "a block has a negative length"),
        (_huge_sdna(), f"its SDNA claims {MAX_SDNA_BYTES + 1} bytes"),
        (Blend("5.0").bytes(sdna=b"SDNANAME\xff"), "its SDNA cannot be read"),
        (Blend("5.0").bytes()[:40], "it ends before its last block (truncated?)"),
        (b"\x1f\x8b" + b"\0" * 30, "it cannot be decompressed"),
        (b"\x28\xb5\x2f\xfd" + b"\xff" * 30, "it cannot be decompressed"),
    ],
)
def test_references_when_file_is_not_a_readable_blend_says_why(
    tmp_path: Path, data: bytes, why: str
) -> None:
    with pytest.raises(Unreadable) as info:
        references(saved(tmp_path, data))
    assert str(info.value).startswith(why)


def test_references_when_path_cannot_be_read_says_so_without_the_path(tmp_path: Path) -> None:
    with pytest.raises(Unreadable) as info:
        references(str(tmp_path))
    assert str(info.value) == "it cannot be read (Is a directory)"


def test_describe_when_many_names_ten_and_counts_the_rest() -> None:
    found = [Reference("image", f"I{i}", f"{i}.png") for i in range(12)] + [
        Reference("file", "", "cache.pc2")
    ]
    text = describe(found)
    assert text.startswith("image 'I0' (0.png), image 'I1' (1.png)")
    assert text.endswith("image 'I9' (9.png) and 3 more")
    assert describe(found[-1:]) == "file 'cache.pc2'"


def _zeros_inside(tmp_path: Path, inflated: int, name: str, fmt: str) -> str:
    """A small compressed .blend whose one DATA block inflates to ``inflated`` zero bytes,
    written as a stream so the test never holds it."""
    head = Blend("5.0").head + struct.pack("<4siQqq", b"DATA", 0, 0, inflated, 1)
    path = tmp_path / name
    with open(path, "wb") as out:
        if fmt == "zstd":
            writer = zstandard.ZstdCompressor(level=1).stream_writer(out)
        else:
            writer = gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1)  # type: ignore[assignment]
        with writer:
            writer.write(head)
            chunk = b"\0" * (1 << 20)
            for _ in range(inflated // len(chunk)):
                writer.write(chunk)
    return str(path)


@pytest.mark.parametrize("fmt", ["zstd", "gzip"])
def test_read_blocks_when_compressed_file_inflates_past_the_limit_stops_naming_the_setting(
    tmp_path: Path, fmt: str
) -> None:
    path = _zeros_inside(tmp_path, 64 << 20, f"bomb-{fmt}.blend", fmt)
    assert Path(path).stat().st_size < 1 << 20  # a small file, 64 MiB inside
    with pytest.raises(TooLarge) as info:
        read_blocks(path, lambda code, size: True, limit=8 << 20)
    said = str(info.value)
    assert "more than 8,388,608 bytes once decompressed" in said
    assert UNPACKED_SETTING in said


def test_read_blocks_when_under_the_limit_reads_the_whole_file(tmp_path: Path) -> None:
    data = Blend("5.0").block(b"DATA", b"\0" * 300_000).library("lib.blend", "/x/lib.blend").bytes()
    path = saved(tmp_path, zstandard.ZstdCompressor().compress(data), "ok.blend")
    blocks, _ = read_blocks(path, lambda code, size: code == b"LI\0\0", limit=len(data))
    assert [b.code for b in blocks] == [b"LI\0\0"]
    with pytest.raises(TooLarge):
        read_blocks(path, lambda code, size: False, limit=len(data) - 100)


@pytest.mark.parametrize("raw", ["12", "-5", "lots", "1e9"])
def test_max_unpacked_when_setting_is_unusable_names_it(raw: str) -> None:
    with pytest.raises(BudgetSettingError, match=f"{UNPACKED_SETTING}='{raw}'"):
        max_unpacked({UNPACKED_SETTING: raw})


def test_max_unpacked_when_unset_or_given_reads_it() -> None:
    assert max_unpacked({}) == DEFAULT_MAX_UNPACKED_BYTES
    assert max_unpacked({UNPACKED_SETTING: str(2 << 30)}) == 2 << 30
