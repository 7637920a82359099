"""The clause forms of the rules grammar: one clause -> one (tool name, args) pair.

Each verb has a handler; verbs with several forms try them in a fixed order and take the
first that reads the whole clause, so the result never depends on anything but the text.
"""

from __future__ import annotations

from typing import Any

from services.planner.backends import rules_forms as forms
from services.planner.backends import rules_geonodes as geonodes
from services.planner.backends.rules_cursor import Cursor, Form, NoParse, Plan, first, once
from services.planner.backends.rules_lexer import Token
from services.planner.backends.rules_vocab import MODIFIERS, PRIMITIVES


# -- objects --------------------------------------------------------------------------
def _create(cur: Cursor, primitive: str) -> Plan:
    seen: dict[str, Any] = {}
    while not cur.at_end():
        if word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            once(seen, "location", cur.location(), word)
        elif word := cur.word("rotated"):
            cur.word("by")
            once(seen, "rotation", cur.vector(), word)
            cur.degrees()
        elif word := cur.word("scaled"):
            cur.word("by")
            once(seen, "scale", cur.number_or_vector(), word)
        else:
            raise NoParse()
    args: dict[str, Any] = {"primitive": primitive}
    for key in ("name", "location", "rotation", "scale"):
        if key in seen:
            args[key] = seen[key]
    return "object.create", args


def value_args(cur: Cursor, relative: bool, value: dict[str, Any]) -> dict[str, Any]:
    """End the clause; add ``mode: relative`` for the ``by`` forms."""
    cur.end()
    return {**value, "mode": "relative"} if relative else value


def _move(cur: Cursor) -> Plan:
    name = cur.name()
    relative = cur.expect("to", "by") == "by"
    location = cur.vector() if relative else cur.location()
    return "object.transform", {"name": name, **value_args(cur, relative, {"location": location})}


def _rotate_axis(cur: Cursor) -> list[Any]:
    angle = cur.number()
    cur.degrees()
    cur.expect("around", "about")
    cur.skip_article()
    axis = cur.expect("x", "y", "z")
    cur.word("axis")
    return [angle if axis == a else 0 for a in ("x", "y", "z")]


def _rotate(cur: Cursor) -> Plan:
    name = cur.name()
    relative = cur.word("by") is not None
    if not relative:
        cur.word("to")
    start = cur.pos
    try:
        rotation = cur.vector()
        cur.degrees()
        cur.end()
    except NoParse:
        if not relative:
            raise
        cur.pos = start
        rotation = _rotate_axis(cur)
    return "object.transform", {"name": name, **value_args(cur, relative, {"rotation": rotation})}


def _scale(cur: Cursor) -> Plan:
    name = cur.name()
    relative = cur.word("by") is not None
    if not relative:
        cur.word("to")
    scale = cur.number_or_vector()
    return "object.transform", {"name": name, **value_args(cur, relative, {"scale": scale})}


def _rename(cur: Cursor) -> Plan:
    name = cur.name()
    cur.expect("to", "as")
    new_name = cur.literal_name()
    cur.end()
    return "object.rename", {"name": name, "new_name": new_name}


def _delete_object(cur: Cursor) -> Plan:
    name = cur.name()
    cur.end()
    return "object.delete", {"name": name}


# -- verbs ----------------------------------------------------------------------------
def _verb_add(cur: Cursor) -> Plan:
    cur.skip_article()
    if [t.lower if t else "" for t in (cur.peek(), cur.peek(1))] == ["array", "of"]:
        return geonodes.array_of(cur)
    primitive = cur.phrase(PRIMITIVES)
    if primitive is not None:
        return _create(cur, primitive)
    mtype = cur.phrase(MODIFIERS)
    if mtype is not None:
        return forms.add_modifier(cur, mtype)
    color = forms.material_head(cur)
    cur.expect("to", "on")
    return forms.material_items(cur, cur.name(), color)


def _verb_delete(cur: Cursor) -> Plan:
    return first(cur, forms.remove_modifier, _delete_object)


def _scene(cur: Cursor) -> None:
    cur.skip_article()
    cur.expect("scene")


def _verb_snapshot(verb: str) -> Form:
    """snapshot [of the scene] | take a snapshot [of the scene] | describe|show [me] the scene"""

    def form(cur: Cursor) -> Plan:
        if verb in ("snapshot", "take"):
            if verb == "take":
                cur.skip_article()
                cur.expect("snapshot")
            if cur.word("of"):
                _scene(cur)
        else:
            cur.word("me")
            _scene(cur)
        cur.end()
        return "scene.snapshot", {}

    return form


VERBS: dict[str, Form] = {
    "add": _verb_add,
    "create": _verb_add,
    "move": _move,
    "rotate": _rotate,
    "scale": _scale,
    "rename": _rename,
    "delete": _verb_delete,
    "remove": _verb_delete,
    "set": forms.verb_set,
    "color": forms.verb_color,
    "colour": forms.verb_color,
    "make": forms.verb_make,
    "give": forms.verb_give,
    "scatter": geonodes.scatter,
    "bevel": forms.shorthand("BEVEL"),
    "subdivide": forms.shorthand("SUBSURF"),
    "snapshot": _verb_snapshot("snapshot"),
    "take": _verb_snapshot("take"),
    "describe": _verb_snapshot("describe"),
    "show": _verb_snapshot("show"),
}


def parse_clause(tokens: tuple[Token, ...], it_name: str | None) -> Plan:
    """Read one clause into (tool name, args); raise ``NoParse`` if it fits no form."""
    cur = Cursor(tokens, it_name)
    cur.word("please")
    verb = cur.take().lower
    form = VERBS.get(verb)
    if form is None:
        raise NoParse()
    return form(cur)
