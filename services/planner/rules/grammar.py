"""The clause forms of the rules grammar: one clause -> its (tool name, args) pairs.

Each verb has a handler; verbs with several forms try them in a fixed order and take the
first that reads the whole clause, so the result never depends on anything but the text
and the scene summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.errors import BlendmeshError
from services.planner.rules import (
    create,
    dimensions,
    forms,
    geonodes,
    organize,
    output,
    stage,
    transform,
)
from services.planner.rules.cursor import Cursor, Form, NoParse, Plan, Plans, first
from services.planner.rules.lexer import Token
from services.planner.rules.readers import targets
from services.planner.rules.scene import Stage
from services.planner.rules.sizes import EXTENT_WORDS
from services.planner.rules.vocab import MODIFIERS
from services.planner.rules.words import (
    EMISSION,
    EMISSION_WORDS,
    NO_TOOL,
    NUMBER_WORDS,
    UNIT_WORDS,
)


def _rename(cur: Cursor) -> Plan:
    name = cur.name()
    cur.expect("to", "as")
    new_name = cur.literal_name()
    cur.end()
    return "object.rename", {"name": name, "new_name": new_name}


def _delete_objects(cur: Cursor) -> list[Plan]:
    names = targets(cur)
    cur.end()
    return [("object.delete", {"name": n}) for n in names]


class NoTool(BlendmeshError):
    """The clause asks for something no blendmesh tool does; the message says what."""


# -- verbs ----------------------------------------------------------------------------
def _add_modifier(cur: Cursor) -> Plan:
    cur.skip_article()
    mtype = cur.phrase(MODIFIERS)
    if mtype is None:
        raise NoParse()
    return forms.add_modifier(cur, mtype)


def _add_material(cur: Cursor) -> Plan:
    color = forms.material_head(cur)
    cur.expect("to", "on")
    return forms.material_items(cur, cur.name(), color)


def _add_light(cur: Cursor) -> Plan:
    cur.skip_article()
    return stage.light_create(cur, stage.light_head(cur))


def _add_camera(cur: Cursor) -> Plan:
    cur.skip_article()
    cur.expect("camera")
    return stage.camera_create(cur)


def _add_collection(cur: Cursor) -> Plan:
    cur.skip_article()
    return organize.collection_create(cur)


def _add_array(cur: Cursor) -> Plans:
    start = cur.pos
    try:
        return create.array_of(cur)
    except NoParse:
        cur.pos = start
        return geonodes.array_of(cur)


def _verb_add(cur: Cursor) -> Plans:
    ahead = [t.lower if t else "" for t in (cur.peek(), cur.peek(1), cur.peek(2))]
    if "of" in ahead[:3] and ({"array", "row", "line"} & set(ahead[:2])):
        return _add_array(cur)
    return first(
        cur,
        output.add_text,  # before the shapes: they read "text" as an unknown one
        output.add_curve,
        create.create,
        _add_modifier,
        _add_camera,
        _add_light,
        _add_collection,
        organize.keyframe,
        _add_material,
        organize.put_in(False),
        output.add_empty,
        output.add_armature,
        output.add_hdri,
    )


def _clear_scene(cur: Cursor) -> list[Plan]:
    """clear|empty the scene: delete every object."""
    cur.skip_article()
    cur.expect("scene")
    cur.end()
    if not cur.stage.known:
        raise NoParse("Clearing the scene needs its contents, which the planner was not given.")
    names = cur.stage.everything()
    if not names:
        raise NoParse("The scene is empty already.")
    return [("object.delete", {"name": n}) for n in names]


def _verb_delete(cur: Cursor) -> Plans:
    return first(cur, forms.remove_modifier, _delete_objects)


_SCENE_WORDS = frozenset({"scene", "objects", "everything", "snapshot", "contents"})
_FILLER = frozenset(
    {"me", "the", "a", "an", "is", "in", "are", "there", "all", "what", "of", "it", "give"}
    | {"list", "object", "which", "has", "does", "contain", "current", "whole", "this"}
)


def _snapshot(cur: Cursor) -> Plan:
    """describe|show|list|what ... scene|objects|everything ...: a scene.snapshot."""
    said: set[str] = set()
    while (token := cur.peek()) is not None and token.lower in _SCENE_WORDS | _FILLER:
        said.add(token.lower)
        cur.pos += 1
    cur.end()
    if not said & _SCENE_WORDS and cur.tokens[0].lower not in ("snapshot", "describe"):
        raise NoParse()
    return "scene.snapshot", {}


QUESTION_WORDS = ("how", "where", "which", "who", "is", "are", "does", "do", "whats", "count")


def _question(cur: Cursor) -> Plan:
    """A question about the scene (how many chairs, what color is the table, where is the
    lamp): answered by the scene's description, which a snapshot run ends with."""
    if cur.tokens[0].lower not in (*QUESTION_WORDS, "what", "what's"):
        raise NoParse()
    cur.pos = len(cur.tokens)
    return "scene.snapshot", {}


def _verb_make(cur: Cursor) -> Plans:
    words = [t.lower if (t := cur.peek(i)) is not None else "" for i in range(3)]
    if words in (["the", "color", "of"], ["the", "colour", "of"]):
        cur.pos += 3  # "make the colour of the sun warm" (or "the sun's colour"): the sun
    return first(
        cur,
        stage.active_camera,
        stage.world,
        stage.make_look,
        stage.light_looks,
        stage.light_power,
        organize.make_shaded,
        organize.make_visible,
        transform.size,
        dimensions.make_size,
        organize.parent_of,
        organize.copies_of,
        forms.verb_make,
        forms.make_looks,
        output.make_track,
    )


def _verb_set(cur: Cursor) -> Plans:
    return first(
        cur,
        stage.world,
        stage.set_lens,
        stage.active_camera,
        stage.set_light,
        forms.verb_set,
        output.set_samples,
        output.set_view,
    )


def _verb_render(cur: Cursor) -> Plans:
    """render with <engine> ...: the scene's render settings; any other render is no tool's."""
    if cur.peek() is None or cur.peek().lower not in ("with", "in", "using"):  # type: ignore[union-attr]
        raise NoTool(
            "blendmesh sets how the scene renders (render with cycles at 64 samples) and "
            "draws views of it (`blendmesh view`); it does not render animations or frames"
        )
    return output.render_with(cur)


def _verb_go(cur: Cursor) -> Plans:
    """go to frame <n>: later clauses keyframe there."""
    cur.expect("to")
    cur.stage.frame = organize.frame(cur)
    cur.end()
    return []


VERBS: dict[str, Form] = {
    "add": _verb_add,
    "create": _verb_add,
    "insert": _verb_add,
    "move": lambda cur: first(cur, transform.move, transform.move_to_place, organize.put_in(True)),
    **dict.fromkeys(("push", "shift", "slide", "nudge"), transform.move),
    "stand": transform.move_to_place,
    "raise": transform.lift(1),
    "lift": transform.lift(1),
    "lower": transform.lift(-1),
    "drop": transform.lift(-1),
    "rotate": lambda cur: first(cur, output.pose_bone, transform.rotate),
    "turn": lambda cur: first(cur, output.pose_bone, transform.rotate, stage.world),
    "spin": transform.rotate,
    "scale": transform.scale,
    "resize": transform.scale,
    "double": transform.double(2),
    "triple": transform.double(3),
    "halve": transform.double(0.5),
    "rename": _rename,
    "delete": _verb_delete,
    "remove": _verb_delete,
    "set": _verb_set,
    "change": _verb_set,
    "color": lambda cur: first(cur, stage.light_looks, forms.verb_color),
    "colour": lambda cur: first(cur, stage.light_looks, forms.verb_color),
    "paint": lambda cur: first(cur, stage.light_looks, forms.verb_color),
    "make": _verb_make,
    "give": forms.verb_give,
    "scatter": geonodes.scatter,
    "bevel": forms.shorthand("BEVEL"),
    "subdivide": forms.shorthand("SUBSURF"),
    "mirror": forms.shorthand("MIRROR"),
    "solidify": forms.shorthand("SOLIDIFY"),
    "array": forms.array,
    "point": stage.point,
    "aim": stage.point,
    "use": lambda cur: first(cur, stage.active_camera, output.add_hdri),
    "parent": organize.parent,
    "attach": organize.parent,
    "unparent": organize.unparent,
    "detach": organize.unparent,
    "clear": lambda cur: first(cur, organize.unparent, _clear_scene),
    "empty": _clear_scene,
    "shade": organize.shade,
    "smooth": organize.smooth,
    "hide": organize.visibility(False),
    "unhide": organize.visibility(True),
    "reveal": organize.visibility(True),
    "show": lambda cur: first(cur, _snapshot, organize.visibility(True)),
    "put": lambda cur: first(
        cur, transform.move_to_place, organize.put_in(False), create.create, _add_light
    ),
    "place": lambda cur: first(
        cur, transform.move_to_place, organize.put_in(False), create.create, _add_light
    ),
    "group": organize.put_in(False),
    "duplicate": organize.duplicate,
    "copy": organize.duplicate,
    "clone": organize.duplicate,
    "apply": organize.apply_modifier,
    "keyframe": organize.keyframe,
    "key": organize.keyframe,
    "animate": organize.keyframe,
    "go": _verb_go,
    "render": _verb_render,
    "export": output.export_as,
    "convert": output.convert,
    "bind": output.bind,
    "skin": output.bind,
    "snapshot": _snapshot,
    "take": _snapshot,
    "describe": _snapshot,
    "list": _snapshot,
    "what": lambda cur: first(cur, _snapshot, _question),
    "what's": lambda cur: first(cur, _snapshot, _question),
    **dict.fromkeys(QUESTION_WORDS, _question),
}
# After a number (and unit), words that go on with the clause before: "0.2 x 1", "3 m in
# diameter", ", 2 m left of the pedestal".
CONTINUING = frozenset(
    {"apart", "by", "x", "in", *EXTENT_WORDS}
    | {"left", "right", "above", "below", "over", "under", "behind", "next", "beside"}
)
_POLITE = ("please", "now", "also", "next", "finally", "then")
_ASK = ("can", "could", "would", "will")


def starts_clause(tokens: Sequence[Token], index: int) -> bool:
    """Whether a clause starts at ``tokens[index]``: a verb, a polite opening or a frame."""
    word = tokens[index].lower
    following = tokens[index + 1].lower if index + 1 < len(tokens) else ""
    if tokens[index].kind == "NUMBER":
        after = tokens[index + 2].lower if index + 2 < len(tokens) else ""
        measure = after if following in UNIT_WORDS else following
        return measure not in CONTINUING  # "2 meters apart", "3 m high" go on the clause
    if word in ("at", "on"):
        return following == "frame"
    if word == "next" and following == "to":
        return False  # ", next to the seat": a place of the clause before, not "next, ..."
    return word in VERBS or word in NO_TOOL or word in _POLITE or word in _ASK


def _opening(cur: Cursor) -> None:
    """Drop "please", "now", "can you", ... and read an "at frame <n>" prefix."""
    while True:
        if cur.word(*_POLITE):
            continue
        token, following = cur.peek(), cur.peek(1)
        if token is not None and token.lower in _ASK and following and following.lower == "you":
            cur.pos += 2
            continue
        if (
            token is not None
            and token.lower in ("at", "on")
            and following
            and following.lower == "frame"
        ):
            cur.stage.frame = organize.frame(cur)
            continue
        return


def _verbless(cur: Cursor) -> bool:
    """Whether the clause is a bare create: "three cubes in a row", "a red sphere"."""
    token = cur.peek()
    return token is not None and (
        token.lower in ("a", "an") or token.lower in NUMBER_WORDS or token.kind == "NUMBER"
    )


def parse_clause(
    tokens: tuple[Token, ...], it_name: str | None, scene: Stage | None = None
) -> list[Plan]:
    """Read one clause into its (tool name, args) pairs; raise ``NoParse`` (with the token
    no form could read) if it fits no form, ``NoTool`` if it asks what no tool does."""
    if len(tokens) > 1 and tokens[-1].lower == "please":
        tokens = tokens[:-1]  # "add a sun please"
    cur = Cursor(tokens, it_name, scene)
    verb = ""
    try:
        _opening(cur)
        cur.read()
        if cur.at_end():
            return []
        if any(t.lower in EMISSION_WORDS and not cur.stage.exists(t.text) for t in tokens):
            raise NoTool(EMISSION)
        if _verbless(cur):
            verb = "add"
            return _plans(create.create(cur))
        token = cur.peek()
        verb = token.lower if token is not None else ""
        if verb in NO_TOOL:
            raise NoTool(NO_TOOL[verb])
        form = VERBS.get(verb)
        if form is None:
            raise NoParse()
        cur.pos += 1
        return _plans(form(cur))
    except NoParse as exc:
        exc.reached, exc.verb = cur.reached if exc.at is None else exc.at, verb
        raise


def _plans(result: Plans) -> list[Plan]:
    return result if isinstance(result, list) else [result]
