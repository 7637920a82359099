"""The pure parts of the PYTHON step sandbox: bwrap argv, the seccomp program, the code hash,
and safe mode's compiler and guards run against a fake scene (no Blender here)."""

from __future__ import annotations

import errno
import hashlib
import signal
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from contracts.python_steps import CODE_SHA256_RE, code_sha256
from services.bridge.sandbox import box, facade, restricted, seccomp
from services.bridge.sandbox.pool import Pool
from services.bridge.sandbox.warm import _signal_answer

LAYOUT = box.Layout(
    bwrap="/usr/bin/bwrap",
    python="/opt/venv/bin/python",
    runtimes=("/opt/python", "/opt/venv"),
    package="/srv/blendmesh/services/executor/bridge/sandbox",
    root_links={"bin": "usr/bin", "lib": None},
)


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


# -- code_sha256 --------------------------------------------------------------------------


def test_code_sha256_when_code_given_is_sha256_of_its_utf8() -> None:
    digest = code_sha256("print('é')")
    assert digest == "sha256:" + hashlib.sha256("print('é')".encode()).hexdigest()
    assert CODE_SHA256_RE.match(digest)


# -- box ----------------------------------------------------------------------------------


FDS = box.Fds(seccomp=7, info=8, block=9)


def test_argv_when_built_binds_only_what_the_layout_names() -> None:
    argv = box.argv(LAYOUT, FDS, ["sandbox.child"])
    assert argv[0] == "/usr/bin/bwrap"
    assert _pairs(argv, "--ro-bind") == [
        ("/usr", "/usr"),
        ("/lib", "/lib"),
        ("/opt/python", "/opt/python"),
        ("/opt/venv", "/opt/venv"),
        (LAYOUT.package, box.INSIDE_PACKAGE),
    ]
    assert "--bind" not in argv and "--proc" not in argv  # nothing of the host is writable
    assert _pairs(argv, "--symlink") == [("usr/bin", "/bin")]
    for flag in ("--unshare-all", "--unshare-user", "--die-with-parent", "--clearenv",
                 "--new-session", "--disable-userns"):  # fmt: skip
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--seccomp") + 1] == "7"
    assert (argv[argv.index("--info-fd") + 1], argv[argv.index("--block-fd") + 1]) == ("8", "9")
    assert argv[argv.index("--uid") + 1] == str(box.STEP_UID) != "0"
    tmpfs = {argv[i + 1]: argv[i - 1] for i, a in enumerate(argv) if a == "--tmpfs"}
    assert set(tmpfs) == {"/tmp", box.INSIDE_WORKDIR}  # memory of its own, each with a size
    assert all(int(size) > 0 for size in tmpfs.values())
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--remount-ro"] == ["/dev", "/"]
    assert "--share-net" not in argv
    assert argv[-5:] == ["/opt/venv/bin/python", "-s", "-B", "-m", "sandbox.child"]


def test_argv_when_venv_lives_under_tmp_binds_it_after_the_private_tmp() -> None:
    # A later --tmpfs /tmp would hide a venv or checkout under the host's /tmp.
    argv = box.argv(LAYOUT, FDS, ["sandbox.child"])
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, arg in enumerate(argv) if arg in ("--ro-bind", "--bind")]
    assert argv[tmpfs + 1] == "/tmp" and all(tmpfs < i for i in binds[1:])


def test_argv_when_built_sets_a_clean_environment() -> None:
    argv = box.argv(LAYOUT, FDS, ["sandbox.child"])
    env = dict(_pairs(argv, "--setenv"))
    assert set(env) == {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "TZ",
    }
    assert env["PYTHONPATH"] == "/blendmesh"
    assert (env["PYTHONHASHSEED"], env["TZ"]) == ("0", "UTC")  # a pinned environment


def test_root_links_when_read_tell_symlinks_from_directories(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "bin").symlink_to("usr/bin")
    (tmp_path / "lib").mkdir()
    assert box.root_links(str(tmp_path)) == {"bin": "usr/bin", "lib": None}


@pytest.mark.parametrize(
    "secret",
    ["/opt/venv/home", "/srv/blendmesh/services/executor/bridge/sandbox/x", "/opt", "/usr/var"],
)
def test_check_secrets_when_a_secret_overlaps_a_bound_path_refuses(secret: str) -> None:
    with pytest.raises(box.SandboxUnavailable, match="BLENDMESH_HOME"):
        box.check_secrets(LAYOUT, [Path(secret)])


def test_check_secrets_when_apart_accepts() -> None:
    box.check_secrets(LAYOUT, [Path("/srv/blendmesh/var"), Path("/srv/creds/nats.creds")])


def test_find_bwrap_when_missing_names_the_package() -> None:
    with pytest.raises(box.SandboxUnavailable, match=r"never runs them unconfined.*'bubblewrap'"):
        box.find_bwrap({"BLENDMESH_BWRAP": "/nonexistent/bwrap", "PATH": "/nonexistent"})


def test_pool_secrets_when_env_given_are_home_and_credentials() -> None:
    pool = Pool({"BLENDMESH_HOME": "/srv/home", "BLENDMESH_NATS_CREDENTIALS": "/srv/c.creds"})
    assert pool.secrets() == [Path("/srv/home"), Path("/srv/c.creds")]
    assert Pool({}).secrets() == [Path("var").absolute()]


@pytest.mark.parametrize(
    ("returncode", "killed", "kind"),
    [
        (128 + signal.SIGALRM, False, "timeout"),
        (-signal.SIGXCPU, False, "timeout"),
        (1, True, "timeout"),
        (128 + signal.SIGSYS, False, "forbidden"),
        (128 + signal.SIGSEGV, False, "crashed"),
    ],
)
def test_signal_answer_when_process_ended_says_why(
    returncode: int, killed: bool, kind: str
) -> None:
    answer = _signal_answer(returncode, killed, 250)
    assert not answer.ok and answer.kind == kind
    if kind == "timeout":
        assert "timeout_ms=250" in answer.message


# -- seccomp ------------------------------------------------------------------------------


def _decode(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


def _run_filter(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """A tiny classic-BPF interpreter for the opcodes the filter uses."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns = _decode(program)
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == seccomp.LD_W_ABS:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == seccomp.RET_K:
            return k
        elif code == seccomp.JA:
            pc += 1 + k
        else:
            taken = {seccomp.JEQ_K: acc == k, seccomp.JGE_K: acc >= k,
                     seccomp.JSET_K: bool(acc & k)}[code]  # fmt: skip
            pc += 1 + (jt if taken else jf)


def test_seccomp_when_assembled_is_whole_sock_filter_records() -> None:
    program = seccomp.sandbox_filter()
    assert len(program) % 8 == 0 and 0 < len(program) // 8 < 256
    assert _decode(program)[0] == (seccomp.LD_W_ABS, 0, 0, seccomp.ARCH_OFFSET)


@pytest.mark.parametrize(
    ("arch", "nr", "arg0", "verdict"),
    [
        (seccomp.AUDIT_ARCH_X86_64, 57, 0, seccomp.RET_ERRNO | errno.EPERM),  # fork
        (seccomp.AUDIT_ARCH_X86_64, 58, 0, seccomp.RET_ERRNO | errno.EPERM),  # vfork
        (seccomp.AUDIT_ARCH_X86_64, 56, 17, seccomp.RET_ERRNO | errno.EPERM),  # clone, SIGCHLD
        (seccomp.AUDIT_ARCH_X86_64, 56, 0x3D0F00, seccomp.RET_ALLOW),  # clone, a thread
        (seccomp.AUDIT_ARCH_X86_64, 435, 0, seccomp.RET_ERRNO | errno.ENOSYS),  # clone3
        (seccomp.AUDIT_ARCH_X86_64, 0, 0, seccomp.RET_ALLOW),  # read
        (seccomp.AUDIT_ARCH_X86_64, 0x40000039, 0, seccomp.RET_KILL_PROCESS),  # x32 fork
        (seccomp.AUDIT_ARCH_AARCH64, 220, 17, seccomp.RET_ERRNO | errno.EPERM),
        (seccomp.AUDIT_ARCH_AARCH64, 220, 0x3D0F00, seccomp.RET_ALLOW),
        (seccomp.AUDIT_ARCH_AARCH64, 435, 0, seccomp.RET_ERRNO | errno.ENOSYS),
        (0x40000003, 2, 0, seccomp.RET_KILL_PROCESS),  # i386 fork through int 0x80
        (seccomp.AUDIT_ARCH_X86_64, 425, 0, seccomp.RET_ERRNO | errno.EPERM),  # io_uring_setup
        (seccomp.AUDIT_ARCH_X86_64, 250, 0, seccomp.RET_ERRNO | errno.EPERM),  # keyctl
        (seccomp.AUDIT_ARCH_X86_64, 298, 0, seccomp.RET_ERRNO | errno.EPERM),  # perf_event_open
        (seccomp.AUDIT_ARCH_X86_64, 101, 0, seccomp.RET_ERRNO | errno.EPERM),  # ptrace
        (seccomp.AUDIT_ARCH_X86_64, 319, 0, seccomp.RET_ERRNO | errno.EPERM),  # memfd_create
        (seccomp.AUDIT_ARCH_X86_64, 59, 0, seccomp.RET_ALLOW),  # execve: bwrap starts Python
        (seccomp.AUDIT_ARCH_X86_64, 41, 16, seccomp.RET_ERRNO | errno.EAFNOSUPPORT),  # netlink
        (seccomp.AUDIT_ARCH_X86_64, 41, 17, seccomp.RET_ERRNO | errno.EAFNOSUPPORT),  # packet
        (seccomp.AUDIT_ARCH_X86_64, 41, 2, seccomp.RET_ALLOW),  # AF_INET
        (seccomp.AUDIT_ARCH_X86_64, 41, 1, seccomp.RET_ALLOW),  # AF_UNIX
        (seccomp.AUDIT_ARCH_AARCH64, 198, 16, seccomp.RET_ERRNO | errno.EAFNOSUPPORT),
        (seccomp.AUDIT_ARCH_AARCH64, 219, 0, seccomp.RET_ERRNO | errno.EPERM),  # keyctl
        (seccomp.AUDIT_ARCH_AARCH64, 63, 0, seccomp.RET_ALLOW),  # read
    ],
)
def test_seccomp_when_run_decides_each_call(arch: int, nr: int, arg0: int, verdict: int) -> None:
    assert _run_filter(seccomp.sandbox_filter(), arch, nr, arg0) == verdict


EPERM = seccomp.RET_ERRNO | errno.EPERM


@pytest.mark.parametrize(
    ("arch", "nr", "verdict"),
    [
        (seccomp.AUDIT_ARCH_X86_64, 59, EPERM),  # execve
        (seccomp.AUDIT_ARCH_X86_64, 322, EPERM),  # execveat
        (seccomp.AUDIT_ARCH_X86_64, 425, EPERM),  # io_uring_setup
        (seccomp.AUDIT_ARCH_X86_64, 250, EPERM),  # keyctl
        (seccomp.AUDIT_ARCH_X86_64, 101, EPERM),  # ptrace
        (seccomp.AUDIT_ARCH_X86_64, 254, EPERM),  # inotify_add_watch: not on the list
        (seccomp.AUDIT_ARCH_X86_64, 999, EPERM),  # a call of a newer kernel
        (seccomp.AUDIT_ARCH_X86_64, 0, seccomp.RET_ALLOW),  # read
        (seccomp.AUDIT_ARCH_X86_64, 202, seccomp.RET_ALLOW),  # futex
        (seccomp.AUDIT_ARCH_X86_64, 435, seccomp.RET_ALLOW),  # clone3: the first filter's
        (seccomp.AUDIT_ARCH_X86_64, 318, seccomp.RET_ALLOW),  # getrandom, the last ones
        (seccomp.AUDIT_ARCH_X86_64, 0x40000000, seccomp.RET_KILL_PROCESS),  # x32 read
        (seccomp.AUDIT_ARCH_AARCH64, 221, EPERM),  # execve
        (seccomp.AUDIT_ARCH_AARCH64, 63, seccomp.RET_ALLOW),  # read
        (seccomp.AUDIT_ARCH_AARCH64, 98, seccomp.RET_ALLOW),  # futex
        (seccomp.AUDIT_ARCH_AARCH64, 219, EPERM),  # keyctl
        (0x40000003, 11, seccomp.RET_KILL_PROCESS),  # i386 execve
    ],
)
def test_step_filter_when_run_allows_only_its_list(arch: int, nr: int, verdict: int) -> None:
    assert _run_filter(seccomp.step_filter(), arch, nr) == verdict


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_step_filter_when_run_allows_every_listed_call_and_nothing_else(arch: str) -> None:
    audit, table = seccomp.TABLES[arch]
    allowed = {table[name] for name in seccomp.ALLOWED if name in table}
    program = seccomp.step_filter()
    for nr in range(512):
        verdict = seccomp.RET_ALLOW if nr in allowed else EPERM
        assert _run_filter(program, audit, nr) == verdict, (arch, nr)


def test_step_filter_when_a_long_jump_goes_backwards_refuses_to_assemble() -> None:
    with pytest.raises(ValueError, match="not forward"):
        seccomp.assemble(
            [("a", (seccomp.RET_K, None, None, 0)), (None, (seccomp.JA, "a", None, 0))]
        )


def test_seccomp_when_a_jump_goes_backwards_refuses_to_assemble() -> None:
    with pytest.raises(ValueError, match="not forward"):
        seccomp.assemble(
            [("a", (seccomp.RET_K, None, None, 0)), (None, (seccomp.JEQ_K, "a", None, 0))]
        )


# -- restricted + facade, against a fake scene -------------------------------------------


def _scene() -> SimpleNamespace:
    cube = SimpleNamespace(name="Cube", type="MESH", location=[0.0, 0.0, 0.0],
                           rotation_euler=[0.0, 0.0, 0.0], scale=[1.0, 1.0, 1.0],
                           hide_viewport=False, hide_render=False, modifiers=_Named([]),
                           active_material=None)  # fmt: skip
    data = SimpleNamespace(objects=_Named([cube]), materials=_Named([]))
    return SimpleNamespace(data=data, context=SimpleNamespace(scene=SimpleNamespace(
        name="Scene", frame_current=7)))  # fmt: skip


class _Named(list[Any]):
    """What a bpy collection offers the facade: iteration, len and get by name."""

    def get(self, name: str) -> Any:
        return next((item for item in self if item.name == name), None)


def _run(code: str) -> tuple[str, bool, SimpleNamespace]:
    real = _scene()
    written = facade.Written()
    out = restricted.Printed(1000)
    exec(restricted.compile_step(code), restricted.step_globals(facade.Bpy(real, written, {}), out))
    return out.text(), written.wrote, real


def test_safe_when_spec_example_runs_on_the_facade_prints_the_name() -> None:
    text, wrote, _ = _run("import bpy\nobj=bpy.data.objects.get('Cube')\n"
                          "print(obj.name if obj else 'missing')")  # fmt: skip
    assert (text, wrote) == ("Cube\n", False)


def test_safe_when_augmented_attribute_assignment_changes_the_real_object() -> None:
    text, wrote, real = _run("import bpy\nc = bpy.data.objects['Cube']\nc.location.z += 2\n"
                             "c.location[0] -= 1\nprint(c.location)")  # fmt: skip
    assert wrote and real.data.objects[0].location == [-1.0, 0.0, 2.0]
    assert text == "(-1, 0, 2)\n"


def test_safe_when_reading_scene_context_gets_plain_values() -> None:
    text, wrote, _ = _run(
        "import bpy\nprint(bpy.context.scene.frame_current, len(bpy.data.objects))"
    )
    assert (text, wrote) == ("7 1\n", False)


@pytest.mark.parametrize(
    ("code", "refusal", "said"),
    [
        ("import os", restricted.Refused, "import 'os' is not allowed in safe mode"),
        ("import bpy\nbpy.ops", facade.NotInFacade, "bpy has no 'ops' in safe mode"),
        ("getattr(1, '__cla' + 'ss__')", restricted.Refused, "reading '__class__' of a int"),
        ("'{0}'.format(1)", restricted.Refused, "reading 'format' of a str is not allowed"),
        ("open('/etc/passwd')", restricted.Refused, "open() is not available in safe mode"),
        ("import bpy\nbpy.data.objects['Cube'].location = 'abc'", facade.FacadeError,
         "location must be 3 numbers, not 'abc'"),
        ("import bpy\nbpy.data.objects['Cube'].location.x = float('nan')", facade.FacadeError,
         "location[0] must be a finite number, not nan"),
        ("import bpy\nbpy.data.objects['Cube'].type = 'LIGHT'", facade.FacadeError,
         "an object.type cannot be set in safe mode; settable: hide_render"),
        ("import bpy\nbpy.data.objects['Cube'].name = 'x\\x00y'", facade.FacadeError,
         "holds a control character (U+0000)"),
        ("import bpy\nbpy.data.objects['Cube'].name = 'a\\x7fb'", facade.FacadeError,
         "holds a control character (U+007F)"),
        ("import bpy\nbpy.data.objects['Cube'].name = 'é' * 32", facade.FacadeError,
         "is 64 bytes of UTF-8; Blender keeps at most 63"),
        ("print('x' * 2000)", restricted.Refused, "the step printed more than 1000 bytes"),
    ],
)  # fmt: skip
def test_safe_when_refused_at_run_time_raises_the_refusal(
    code: str, refusal: type[Exception], said: str
) -> None:
    with pytest.raises(refusal) as refused:
        _run(code)
    assert said in str(refused.value)


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("__import__('os')", '"__import__" is an invalid variable name'),
        ("x.__class__", '"__class__" is an invalid attribute name'),
        ("x._real += 1", '"_real" is an invalid attribute name'),
        ("exec('1')", "Exec calls are not allowed"),
        ("if x\n", "SyntaxError: expected ':'"),
    ],
)
def test_compile_step_when_refused_names_line_and_reason(code: str, said: str) -> None:
    with pytest.raises(restricted.CompileRefused, match=r"(?i)line 1") as caught:
        restricted.compile_step(code)
    assert said in str(caught.value)


def test_printed_when_over_its_limit_is_flagged_and_keeps_what_fit() -> None:
    out = restricted.Printed(5)
    out.write("abc")
    with pytest.raises(restricted.Refused, match="more than 5 bytes"):
        out.write("def")
    assert out.overflowed and out.text() == "abc"
