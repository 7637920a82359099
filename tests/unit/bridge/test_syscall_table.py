"""The sandbox's system call numbers are the kernel's own, checked against the headers
they were copied from wherever those headers are installed (Debian's linux-libc-dev)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.bridge.sandbox import seccomp, syscall_table

HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}
ALIASES = {"aarch64": {"newfstatat": "fstatat"}}  # the generic table's name for the call


def numbers(header: Path) -> dict[str, int]:
    found = re.findall(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text(), re.M)
    return {name: int(nr) for name, nr in found}


@pytest.mark.parametrize("arch", sorted(HEADERS))
def test_table_when_read_beside_the_kernels_headers_has_their_numbers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"the kernel's headers are not installed here ({header} is missing)")
    theirs = numbers(header)
    ours = seccomp.TABLES[arch][1]
    for name, nr in ours.items():
        assert theirs[ALIASES.get(arch, {}).get(name, name)] == nr, name


def test_table_when_a_filter_names_a_call_has_its_number_on_x86_64() -> None:
    named = {*syscall_table.ALLOWED, *seccomp.REFUSED, "clone", "clone3", "socket", "fork"}
    assert named <= set(syscall_table.X86_64)
    # aarch64 lacks only the calls that newer ones replaced there.
    assert "openat" in syscall_table.AARCH64 and "open" not in syscall_table.AARCH64


def test_allow_list_when_read_holds_none_of_the_refused_calls() -> None:
    allowed = set(syscall_table.ALLOWED)
    assert not allowed & {*seccomp.REFUSED, "execve", "execveat", "fork", "vfork"}
