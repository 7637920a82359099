"""Safe mode's language: RestrictedPython compilation and the guards its code calls.

RestrictedPython refuses at compile time what is visibly dangerous (names and attributes
starting with ``_``, ``exec``-like statements) and rewrites every attribute read, item
read, write, iteration and ``print`` into a call of a guard defined here. The guards
allow attributes only by allowlist: the documented names of the bpy facade, and the
public methods of plain values (str, numbers, lists, dicts, ...). Generators, frames,
tracebacks, functions and classes expose nothing, so ``gi_frame.f_globals`` and friends
lead nowhere; ``str.format`` is refused because its fields read attributes unguarded.

Runs inside the sandbox: imports only the standard library, RestrictedPython and the
sibling facade.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from . import facade

FILENAME = "<python step>"
IMPORTABLE = ("bpy", "math")
_PLAIN = (str, int, float, bool, complex, tuple, list, dict, set, frozenset, range, bytes)
_REFUSED_METHODS = frozenset({"format", "format_map"})  # "{0.__class__}".format(x)
_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
}


class Refused(Exception):
    """The step tried something safe mode does not allow; reported as policy_refused."""


class CompileRefused(Exception):
    """RestrictedPython (or Python) would not compile the step; reported as invalid_input."""


class _Transformer(RestrictingNodeTransformer):
    """RestrictedPython's rules, plus augmented assignment to attributes and items
    (``obj.location.z += 1``), rewritten into one guarded call so the target is
    evaluated once and both the read and the write pass the guards."""

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        target = node.target
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return super().visit_AugAssign(node)
        op = ast.Constant(_op_text(node.op))
        if isinstance(target, ast.Attribute):
            if target.attr.startswith("_"):
                self.error(node, f'"{target.attr}" is an invalid attribute name because it '
                           'starts with "_".')  # fmt: skip
                return node
            func, key = "_inplace_attr_", ast.Constant(target.attr)
        else:
            func, key = "_inplace_item_", self.visit(target.slice)
        # Only the operands are visited: the guard's own name starts with "_" on purpose.
        call = ast.Call(
            func=ast.Name(func, ast.Load()),
            args=[self.visit(target.value), key, op, self.visit(node.value)],
            keywords=[],
        )
        new = ast.copy_location(ast.Expr(call), node)
        ast.fix_missing_locations(new)
        return new


def _op_text(op: ast.operator) -> str:
    names = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=",
             ast.FloorDiv: "//=", ast.Mod: "%=", ast.Pow: "**=", ast.LShift: "<<=",
             ast.RShift: ">>=", ast.BitAnd: "&=", ast.BitOr: "|=", ast.BitXor: "^="}  # fmt: skip
    if type(op) not in names:
        raise CompileRefused(f"the operator {type(op).__name__} cannot be used in place")
    return names[type(op)]


def compile_step(code: str) -> Any:
    """The step's code object, or CompileRefused listing every refusal with its line."""
    try:
        result = compile_restricted_exec(code, FILENAME, policy=_Transformer)
    except SyntaxError as err:
        raise CompileRefused(f"line {err.lineno}: {err.msg}") from None
    if result.errors or result.code is None:
        raise CompileRefused("; ".join(result.errors) or "the code did not compile")
    return result.code


def allowed(obj: Any, name: str) -> bool:
    """May safe-mode code read ``obj.<name>``?"""
    if not isinstance(name, str) or name.startswith("_"):
        return False
    if isinstance(obj, facade.Facade):
        return name in type(obj).PUBLIC
    if obj is math:
        return True
    if isinstance(obj, BaseException):
        return name == "args"
    return type(obj) in _PLAIN and name not in _REFUSED_METHODS


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``obj.name`` when ``allowed``; otherwise Refused naming the attribute."""
    if not allowed(obj, name):
        if isinstance(obj, facade.Facade) and not name.startswith("_"):
            raise facade.missing(type(obj).DESCRIBED, name, type(obj).PUBLIC)
        raise Refused(
            f"reading {name!r} of a {type(obj).__name__} is not allowed in safe mode; "
            "safe steps may only use the bpy facade and plain values"
        )
    return getattr(obj, name, *default)


def guarded_hasattr(obj: Any, name: str) -> bool:
    return allowed(obj, name) and hasattr(obj, name)


def guarded_write(obj: Any) -> Any:
    """The target of an attribute or item assignment: facades guard their own names."""
    if isinstance(obj, facade.Facade | list | dict | set):
        return obj
    raise Refused(
        f"changing a {type(obj).__name__} is not allowed in safe mode; only the bpy facade "
        "and lists, dicts and sets a step made itself can be changed"
    )


def inplace_attr(obj: Any, name: str, op: str, value: Any) -> None:
    result = _INPLACE[op](guarded_getattr(obj, name), value)
    setattr(guarded_write(obj), name, result)


def inplace_item(obj: Any, key: Any, op: str, value: Any) -> None:
    result = _INPLACE[op](obj[key], value)
    guarded_write(obj)[key] = result


def inplacevar(op: str, left: Any, right: Any) -> Any:
    return _INPLACE[op](left, right)


def guarded_import(bpy: facade.Bpy) -> Callable[..., Any]:
    """``__import__`` for safe mode: ``bpy`` is the facade, ``math`` is math, and every
    other module is refused."""

    def _import(name: str, globals: Any = None, locals: Any = None,
                fromlist: Iterable[str] = (), level: int = 0) -> Any:  # fmt: skip
        if name == "bpy" and level == 0:
            return bpy
        if name == "math" and level == 0:
            return math
        raise Refused(
            f"import {name!r} is not allowed in safe mode: a safe step may import only "
            f"{' and '.join(IMPORTABLE)} (bpy is the facade in docs/python-steps.md); "
            "ask for a trusted step if it needs more"
        )

    return _import


class Printed:
    """Where ``print`` writes: text up to ``limit`` UTF-8 bytes, then ``overflowed`` is set
    and every further print raises, so the step stops instead of filling memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.overflowed = False

    def write(self, text: str) -> int:
        size = len(text.encode("utf-8", errors="replace"))
        if self.overflowed or self.size + size > self.limit:
            self.overflowed = True
            raise Refused(f"the step printed more than {self.limit} bytes")
        self.parts.append(text)
        self.size += size
        return len(text)

    def flush(self) -> None:
        """Streams have it; there is nothing to flush."""

    def text(self) -> str:
        return "".join(self.parts)


def print_factory(out: Printed) -> Callable[..., Any]:
    """What RestrictedPython's ``_print_`` must be: called once per scope, returning an
    object whose ``_call_print`` does the printing."""

    class _Print:
        def __init__(self, _getattr_: Any = None) -> None:
            pass

        def _call_print(self, *objects: Any, **kwargs: Any) -> None:
            kwargs.pop("file", None)
            print(*objects, file=out, **kwargs)

        def __call__(self) -> str:
            return out.text()

    return _Print


_SAFE_BUILTINS = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in (
        "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float",
        "frozenset", "int", "isinstance", "len", "list", "map", "max", "min", "ord", "pow",
        "range", "repr", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip",
        "True", "False", "None", "ArithmeticError", "AssertionError", "AttributeError",
        "Exception", "IndexError", "KeyError", "LookupError", "NameError", "TypeError",
        "ValueError", "ZeroDivisionError",
    )
}  # fmt: skip


# Refused by name, so a step that reaches for one hears why rather than a NameError.
_REFUSED_BUILTINS = (
    "open", "compile", "exec", "eval", "globals", "locals", "vars", "dir", "type", "object",
    "super", "input", "breakpoint", "help", "memoryview", "setattr", "delattr", "classmethod",
    "staticmethod", "property", "id", "exit", "quit",
)  # fmt: skip


def _refusing(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise Refused(f"{name}() is not available in safe mode; ask for a trusted step")

    return refuse


def step_globals(bpy: facade.Bpy, out: Printed) -> dict[str, Any]:
    """The globals a safe step runs with; nothing in them reaches real bpy."""
    builtins = {
        **{name: _refusing(name) for name in _REFUSED_BUILTINS},
        **_SAFE_BUILTINS,
        "__import__": guarded_import(bpy),
        "getattr": guarded_getattr,
        "hasattr": guarded_hasattr,
    }
    return {
        "__builtins__": builtins,
        "__name__": "__python_step__",
        "_getattr_": guarded_getattr,
        "_getitem_": operator.getitem,
        "_getiter_": iter,
        "_write_": guarded_write,
        "_inplacevar_": inplacevar,
        "_inplace_attr_": inplace_attr,
        "_inplace_item_": inplace_item,
        "_print_": print_factory(out),
        "_unpack_sequence_": guarded_unpack_sequence,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
    }
