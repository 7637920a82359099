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

``execve`` must stay open while bubblewrap starts the sandboxed Python; the child adds
``no_exec_filter`` itself once bpy is imported (filters stack, and bubblewrap has set
no_new_privs), so the step's code can start no program, shell or not.
"""

from __future__ import annotations

import ctypes
import errno
import socket
import struct
from collections.abc import Mapping, Sequence

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
SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
NR_OFFSET = 0
ARCH_OFFSET = 4
ARG0_LOW_OFFSET = 16  # the low half of args[0] on a little-endian machine

# System call numbers (asm/unistd_64.h; aarch64 uses asm-generic/unistd.h).
X86_64 = {
    "clone": 56, "fork": 57, "vfork": 58, "clone3": 435, "socket": 41,
    "execve": 59, "execveat": 322,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "add_key": 248, "request_key": 249, "keyctl": 250, "perf_event_open": 298,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321,
    "userfaultfd": 323, "memfd_create": 319, "memfd_secret": 447,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
    "setns": 308, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "name_to_handle_at": 303, "open_by_handle_at": 304,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
    "quotactl": 179,
}  # fmt: skip
AARCH64 = {  # no fork or vfork
    "clone": 220, "clone3": 435, "socket": 198, "execve": 221, "execveat": 281,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "add_key": 217, "request_key": 218, "keyctl": 219, "perf_event_open": 241,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280,
    "userfaultfd": 282, "memfd_create": 279, "memfd_secret": 447,
    "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97,
    "setns": 268, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "name_to_handle_at": 264, "open_by_handle_at": 265,
    "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
    "quotactl": 60,
}  # fmt: skip
TABLES = {"x86_64": (AUDIT_ARCH_X86_64, X86_64), "aarch64": (AUDIT_ARCH_AARCH64, AARCH64)}
REFUSED = tuple(
    name for name in X86_64 if name not in ("clone", "clone3", "fork", "vfork", "socket")
    and not name.startswith("exec")
)  # fmt: skip
EXEC = ("execve", "execveat")

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


def no_exec_program() -> Program:
    """The filter the child adds after start-up: no execve or execveat."""
    program = _arch_dispatch()
    for arch, (_, table) in TABLES.items():
        program += _arch_block(arch, table, EXEC)
        program.append((None, (JEQ_K, "allow", "allow", 0)))
    return program + _tail()


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


def sandbox_filter() -> bytes:
    """The compiled filter bubblewrap loads with ``--seccomp FD``."""
    return assemble(sandbox_program())


def no_exec_filter() -> bytes:
    """The compiled filter ``install`` adds in the sandboxed process."""
    return assemble(no_exec_program())


PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Add ``program`` to the calling process's filters (no_new_privs must be set, as
    bubblewrap does); OSError when the kernel refuses it."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot add the no-exec seccomp filter: {errno.errorcode[err]}")
