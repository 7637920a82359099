"""The seccomp filter that stops a sandboxed step from starting processes.

RLIMIT_NPROC is not enough: the kernel does not enforce it for root, and blendmesh may
run as root in a container. bubblewrap loads a classic BPF program from a file
descriptor (``--seccomp FD``); this module writes that program. It refuses ``fork``,
``vfork`` and every ``clone`` that would make a process, and lets threads through
(``clone`` with CLONE_THREAD), because Blender and Python start threads of their own.
``clone3`` answers ENOSYS so glibc falls back to ``clone``, whose flags a classic filter
can read (clone3 passes them in memory). A system call from any other architecture
(x32, or i386 through ``int 0x80``) kills the process: its numbers mean other calls.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Sequence

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
RET_K = 0x06
RET_ALLOW = 0x7FFF_0000
RET_ERRNO = 0x0005_0000
RET_KILL_PROCESS = 0x8000_0000

AUDIT_ARCH_X86_64 = 0xC000_003E
AUDIT_ARCH_AARCH64 = 0xC000_00B7
X32_SYSCALL_BIT = 0x4000_0000
CLONE_THREAD = 0x0001_0000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
NR_OFFSET = 0
ARCH_OFFSET = 4
ARG0_LOW_OFFSET = 16  # the low half of args[0] on a little-endian machine

X86_64 = {"clone": 56, "fork": 57, "vfork": 58, "clone3": 435}
AARCH64 = {"clone": 220, "clone3": 435}  # aarch64 has no fork or vfork

# One instruction: opcode, then jump targets as labels (or None), then k.
Instruction = tuple[int, str | None, str | None, int]


def _program() -> list[tuple[str | None, Instruction]]:
    """The filter as (label, instruction) pairs; jumps name labels, resolved later."""
    eperm = RET_ERRNO | errno.EPERM
    enosys = RET_ERRNO | errno.ENOSYS
    return [
        (None, (LD_W_ABS, None, None, ARCH_OFFSET)),
        (None, (JEQ_K, "x86_64", None, AUDIT_ARCH_X86_64)),
        (None, (JEQ_K, "aarch64", "kill", AUDIT_ARCH_AARCH64)),
        ("x86_64", (LD_W_ABS, None, None, NR_OFFSET)),
        (None, (JGE_K, "kill", None, X32_SYSCALL_BIT)),
        (None, (JEQ_K, "eperm", None, X86_64["fork"])),
        (None, (JEQ_K, "eperm", None, X86_64["vfork"])),
        (None, (JEQ_K, "enosys", None, X86_64["clone3"])),
        (None, (JEQ_K, "clone", "allow", X86_64["clone"])),
        ("aarch64", (LD_W_ABS, None, None, NR_OFFSET)),
        (None, (JEQ_K, "enosys", None, AARCH64["clone3"])),
        (None, (JEQ_K, "clone", "allow", AARCH64["clone"])),
        ("clone", (LD_W_ABS, None, None, ARG0_LOW_OFFSET)),
        (None, (JSET_K, "allow", "eperm", CLONE_THREAD)),
        ("allow", (RET_K, None, None, RET_ALLOW)),
        ("eperm", (RET_K, None, None, eperm)),
        ("enosys", (RET_K, None, None, enosys)),
        ("kill", (RET_K, None, None, RET_KILL_PROCESS)),
    ]


def assemble(program: Sequence[tuple[str | None, Instruction]]) -> bytes:
    """``struct sock_filter`` records (u16 code, u8 jt, u8 jf, u32 k) in native order,
    with each label turned into the forward distance BPF jumps by."""
    where = {label: i for i, (label, _) in enumerate(program) if label}
    out = bytearray()
    for i, (_, (code, jt, jf, k)) in enumerate(program):
        offsets = []
        for target in (jt, jf):
            distance = 0 if target is None else where[target] - (i + 1)
            if not 0 <= distance <= 255:
                raise ValueError(f"instruction {i}: jump to {target!r} is not forward")
            offsets.append(distance)
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return bytes(out)


def no_new_processes() -> bytes:
    """The compiled filter bubblewrap loads with ``--seccomp FD``."""
    return assemble(_program())
