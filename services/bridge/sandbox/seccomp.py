"""The seccomp filters a sandboxed step runs under: no new processes, no kernel surface a
step has no use for, and (once Blender has started) no new programs.

RLIMIT_NPROC is not enough: the kernel does not enforce it for root, and blendmesh may
run as root in a container. bubblewrap loads a classic BPF program from a file
descriptor (``--seccomp FD``); ``sandbox_filter`` writes that program. It refuses ``fork``,
``vfork`` and every ``clone`` that would make a process, and lets threads through
(``clone`` with CLONE_THREAD), because Blender and Python start threads of their own.
``clone3`` answers ENOSYS so glibc falls back to ``clone``, whose flags a classic filter
can read (clone3 passes them in memory). The calls in ``REFUSED`` answer EPERM: io_uring,
the kernel keyring, perf events, ptrace and cross-process memory, BPF, userfaultfd,
memfd (anonymous files no disk limit sees), mounts and namespaces, modules, kexec, swap.
``socket`` is let through for AF_UNIX, AF_INET and AF_INET6 only (the step's network
namespace has nothing to reach); netlink, packet and every other family answer
EAFNOSUPPORT. A system call from any other architecture (x32, or i386 through
``int 0x80``) kills the process: its numbers mean other calls.

``execve`` must stay open while bubblewrap starts the sandboxed Python, and Blender's
start-up makes calls a step has no use for; so the child adds ``step_filter`` itself once
bpy is imported (filters stack, and bubblewrap has set no_new_privs). That one is an
allow-list (``syscall_table.ALLOWED``): every other call answers EPERM, ``execve`` and
``execveat`` among them, so the step's code can start no program, shell or not. It is
added to every thread of the process at once (``SECCOMP_FILTER_FLAG_TSYNC``): the threads
Blender started while importing would otherwise go on without it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
from collections.abc import Mapping, Sequence

from .syscall_table import AARCH64, ALLOWED, X86_64

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
LD_W_ABS = 0x20
JA = 0x05  # jumps by k, as far as it must (the others jump at most 255)
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
SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
NR_OFFSET = 0
ARCH_OFFSET = 4
ARG0_LOW_OFFSET = 16  # the low half of args[0] on a little-endian machine

TABLES = {"x86_64": (AUDIT_ARCH_X86_64, X86_64), "aarch64": (AUDIT_ARCH_AARCH64, AARCH64)}
REFUSED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "add_key", "request_key",
    "keyctl", "perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev", "bpf",
    "userfaultfd", "memfd_create", "memfd_secret", "mount", "umount2", "pivot_root", "chroot",
    "unshare", "setns", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "name_to_handle_at", "open_by_handle_at", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl",
)  # fmt: skip

# One instruction: opcode, then jump targets as labels (or None), then k.
Instruction = tuple[int, str | None, str | None, int]
Program = list[tuple[str | None, Instruction]]


def _arch_dispatch() -> Program:
    """Load the architecture and jump to its block; any other one is killed."""
    return [
        (None, (LD_W_ABS, None, None, ARCH_OFFSET)),
        (None, (JEQ_K, "x86_64", None, AUDIT_ARCH_X86_64)),
        (None, (JEQ_K, "aarch64", "kill", AUDIT_ARCH_AARCH64)),
    ]


def _tail() -> Program:
    return [
        ("allow", (RET_K, None, None, RET_ALLOW)),
        ("eperm", (RET_K, None, None, RET_ERRNO | errno.EPERM)),
        ("enosys", (RET_K, None, None, RET_ERRNO | errno.ENOSYS)),
        ("eafnosupport", (RET_K, None, None, RET_ERRNO | errno.EAFNOSUPPORT)),
        ("kill", (RET_K, None, None, RET_KILL_PROCESS)),
    ]


def _arch_block(arch: str, table: Mapping[str, int], refused: Sequence[str]) -> Program:
    """One architecture's checks: every refused call, then the process-making ones."""
    block: Program = [(arch, (LD_W_ABS, None, None, NR_OFFSET))]
    if arch == "x86_64":
        block.append((None, (JGE_K, "kill", None, X32_SYSCALL_BIT)))
    block += [(None, (JEQ_K, "eperm", None, table[name])) for name in refused if name in table]
    return block


def sandbox_program() -> Program:
    """The filter bubblewrap loads: processes, refused calls and socket families."""
    program = _arch_dispatch()
    for arch, (_, table) in TABLES.items():
        program += _arch_block(arch, table, (*REFUSED, "fork", "vfork"))
        program += [
            (None, (JEQ_K, "enosys", None, table["clone3"])),
            (None, (JEQ_K, "socket", None, table["socket"])),
            (None, (JEQ_K, "clone", "allow", table["clone"])),
        ]
    program += [
        ("clone", (LD_W_ABS, None, None, ARG0_LOW_OFFSET)),
        (None, (JSET_K, "allow", "eperm", CLONE_THREAD)),
        ("socket", (LD_W_ABS, None, None, ARG0_LOW_OFFSET)),
        *[(None, (JEQ_K, "allow", None, int(family))) for family in SOCKET_FAMILIES],
        (None, (JEQ_K, "eafnosupport", "eafnosupport", 0)),
    ]
    return program + _tail()


def _allowed_block(arch: str, table: Mapping[str, int], allowed: Sequence[str]) -> Program:
    """One architecture's allow-list: its calls in runs short enough for BPF's jumps, each
    run with an ``allow`` of its own after it, then EPERM for everything else."""
    kill = f"{arch}-kill"  # here, not in a shared tail: that is too far to jump to
    block: Program = [(arch, (LD_W_ABS, None, None, NR_OFFSET))]
    if arch == "x86_64":
        block.append((None, (JGE_K, kill, None, X32_SYSCALL_BIT)))
    numbers = sorted({table[name] for name in allowed if name in table})
    runs = [numbers[i : i + 100] for i in range(0, len(numbers), 100)]
    for i, run in enumerate(runs):
        allow, after = f"{arch}-allow-{i}", f"{arch}-after-{i}"
        block += [(None, (JEQ_K, allow, None, nr)) for nr in run]
        block += [(None, (JEQ_K, after, after, 0)), (allow, (RET_K, None, None, RET_ALLOW))]
        block.append((after, (LD_W_ABS, None, None, NR_OFFSET)))  # where the next run starts
    block.append((None, (RET_K, None, None, RET_ERRNO | errno.EPERM)))
    block.append((kill, (RET_K, None, None, RET_KILL_PROCESS)))
    return block


def step_program() -> Program:
    """The filter the child adds once Blender has started: only ``ALLOWED`` calls."""
    program: Program = [
        (None, (LD_W_ABS, None, None, ARCH_OFFSET)),
        (None, (JEQ_K, None, "not-x86_64", AUDIT_ARCH_X86_64)),
        (None, (JA, "x86_64", None, 0)),
        ("not-x86_64", (JEQ_K, None, "other", AUDIT_ARCH_AARCH64)),
        (None, (JA, "aarch64", None, 0)),
        ("other", (RET_K, None, None, RET_KILL_PROCESS)),
    ]
    for arch, (_, table) in TABLES.items():
        program += _allowed_block(arch, table, ALLOWED)
    return program


def assemble(program: Sequence[tuple[str | None, Instruction]]) -> bytes:
    """``struct sock_filter`` records (u16 code, u8 jt, u8 jf, u32 k) in native order,
    with each label turned into the forward distance BPF jumps by."""
    where = {label: i for i, (label, _) in enumerate(program) if label}
    out = bytearray()
    for i, (_, (code, jt, jf, k)) in enumerate(program):
        if code == JA:  # its target is k, the forward distance, however far
            if jt is None or where[jt] <= i:
                raise ValueError(f"instruction {i}: jump to {jt!r} is not forward")
            out += struct.pack("=HBBI", code, 0, 0, where[jt] - (i + 1))
            continue
        offsets = []
        for target in (jt, jf):
            distance = 0 if target is None else where[target] - (i + 1)
            if not 0 <= distance <= 255:
                raise ValueError(f"instruction {i}: jump to {target!r} is not forward")
            offsets.append(distance)
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return bytes(out)


def sandbox_filter() -> bytes:
    """The compiled filter bubblewrap loads with ``--seccomp FD``."""
    return assemble(sandbox_program())


def step_filter() -> bytes:
    """The compiled filter ``install`` adds in the sandboxed process."""
    return assemble(step_program())


SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_SYSCALL = {"x86_64": X86_64["seccomp"], "aarch64": AARCH64["seccomp"]}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Add ``program`` to the filters of every thread of the calling process
    (no_new_privs must be set, as bubblewrap does); OSError when the kernel refuses it,
    or names a thread it could not add it to."""
    number = SECCOMP_SYSCALL.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {os.uname().machine}")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    found = libc.syscall(
        ctypes.c_long(number),
        ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
        ctypes.c_ulong(SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(fprog),
    )
    if found > 0:  # TSYNC answers the id of a thread that could not take the filter
        raise OSError(errno.EPERM, f"cannot add the step's seccomp filter to thread {found}")
    if found != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot add the step's seccomp filter: {errno.errorcode[err]}")
