"""Refusals of the rules planner: short, pointing at the first word not understood.

A refusal says which of two things went wrong: no tool does what was asked ("render an
animation", or a tool the connected bridge lacks), or the words did not fit the grammar
("say it another way", with only the forms of the verb used). docs/grammar.md shows each.
"""

from __future__ import annotations

from contracts.errors import BlendmeshError
from services.planner.rules.lexer import Clause

UNREADABLE, NO_TOOL = "unreadable", "no_tool"
WINDOW = 3  # tokens quoted on each side of the word not understood

GRAMMAR_SUMMARY = """\
Start each instruction with a verb; join instructions with , ; . "and" "then" (docs/grammar.md):
  add a red metallic sphere named Ball at 0 0 2    add three cubes in a row spaced 3
  move Box up 2 | to 0 0 1 | 1 along x    rotate Ring 45 around z    make Box twice as big
  color Box blue    add a bevel modifier to Box    apply the bevel on Box    delete all cubes
  add a camera at 0 -10 5 looking at Box    add a warm area light above Box
  make the background dark blue    parent Wheel to Car    shade Ball smooth    hide Box in renders
  put Box and Ball in a collection named Props    duplicate Box 3 times along x
  keyframe Box location at frame 1    describe the scene
  add a floor 10 m wide    put a lamp on top of the table    make the posts dark red
  add 4 posts in a row along x, 2 meters apart    how many chairs are there?"""

_CREATE = (
    "add [a|<count>] [red|metallic|rough|smooth ...] <primitive>[s] [named <N>] [at <vec>|above"
    " <N>]\n  [rotated <vec>] [scaled <n>] [in a row|along x|y|z] [spaced <d>]"
    "    add an array of 5 spheres along y"
    "\n  add a floor 10 m wide | a post with radius 0.1 and height 2 | a lamp on top of <N>"
    "\n  add 4 posts in a row along x, 2 meters apart    add a cube named House next to <N>"
)
HELP: dict[str, str] = {
    "add": _CREATE
    + "\n  add a <modifier> modifier to <N> [with <param> <value> ...]"
    + "\n  add a camera [at <vec>] [looking at <N>]"
    + "\n  add a [warm] sun|point|spot|area light [at <vec>|above <N>] [with power <n>]"
    + "\n  add a collection named <C>    add an array of <n> <N> along x|y|z [spaced <d>]",
    "move": "move <N> to <vec> | by <vec> | up|down|left|right|forward|back <n> | <n> along x|y|z"
    + "\n  move <N> to the <C> collection",
    "raise": "raise|lower <N> [by] <n>",
    "rotate": "rotate <N> [to|by] <x y z> [degrees]    rotate <N> <n> degrees around x|y|z",
    "scale": "scale <N> [to|by] <n>|<vec>    scale <N> by half|50%",
    "make": "make <N> twice as big | half the size | 50% bigger | 3 times bigger"
    + "\n  make <N> red|metallic|rough|smooth    make <N> the active camera"
    + "\n  make the background <color>    make 3 copies of <N> along x",
    "set": "set the color|metallic|roughness of <N> to <value>    set width of bevel on <N> to 0.3"
    + "\n  set the lens of <camera> to 85    set the power of <light> to 500"
    + "\n  set the background to <color>    set the active camera to <N>",
    "color": "color <N> <color>    colors: red green blue ... #rrggbb, 1 0.5 0, dark blue",
    "delete": "delete <N> | <N> and <M> | everything | all cubes|lights"
    + "\n  remove the <M> modifier from <N>",
    "rename": "rename <N> to <New>",
    "point": "point the camera|<camera> at <N>|<vec>",
    "parent": "parent <child> to <parent>    unparent <N>",
    "shade": "shade <N> smooth|flat",
    "hide": "hide|show <N> [in renders|in the viewport|everywhere]",
    "put": "put <N> [and <M>] in [a new] collection [named] <C>",
    "duplicate": "duplicate <N> [<n> times] [along x|y|z] [spaced <d>] [named <New>] [linked]",
    "apply": "apply [the] <modifier> on <N>    apply all modifiers on <N>",
    "keyframe": "keyframe <N> location|rotation|scale at frame <n>"
    + "\n  at frame 24 move <N> to 0 0 5 and keyframe it",
    "describe": "describe the scene | what is in the scene | list objects",
    "give": "give <N> a [red] material [with color <c> metallic <x> roughness <x>]",
    "scatter": "scatter <n> <N> on <Surface>",
}
ALIASES = {
    "create": "add", "insert": "add", "lift": "raise", "lower": "raise", "drop": "raise",
    "turn": "rotate", "spin": "rotate", "resize": "scale", "double": "make", "halve": "make",
    "triple": "make", "change": "set", "colour": "color", "paint": "color", "remove": "delete",
    "aim": "point", "use": "make", "attach": "parent", "unparent": "parent", "detach": "parent",
    "clear": "parent", "unhide": "hide", "reveal": "hide", "show": "hide", "place": "put",
    "group": "put", "copy": "duplicate", "clone": "duplicate", "key": "keyframe",
    "animate": "keyframe", "go": "keyframe", "snapshot": "describe", "take": "describe",
    "list": "describe", "what": "describe", "bevel": "add", "subdivide": "add",
    "push": "move", "shift": "move", "slide": "move", "nudge": "move", "smooth": "shade",
    "mirror": "add", "solidify": "add",
}  # fmt: skip
KNOWN_VERBS = (
    "add, move, raise, lower, rotate, scale, make, set, color, rename, delete, duplicate, "
    "parent, shade, hide, show, put, apply, keyframe, point, describe"
)


class UnreadableRequest(BlendmeshError):
    """The request has a part the planner cannot plan.

    ``unread`` is the clause as typed; ``kind`` is ``unreadable`` (say it another way)
    or ``no_tool`` (no tool does it); ``message`` is what to show the person.
    """

    def __init__(self, unread: str, message: str, kind: str = UNREADABLE) -> None:
        super().__init__(message)
        self.unread = unread
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        return self.message


def window(clause: Clause, index: int) -> str:
    """The clause's text around token ``index``, cut with "..." where it goes on."""
    tokens = clause.tokens
    index = min(index, len(tokens) - 1)
    low, high = max(0, index - WINDOW), min(len(tokens), index + WINDOW + 1)
    offset = tokens[0].start
    text = clause.text[tokens[low].start - offset : tokens[high - 1].end - offset]
    return ("..." if low > 0 else "") + text + ("..." if high < len(tokens) else "")


def unreadable(clause: Clause, reached: int, reason: str, verb: str) -> UnreadableRequest:
    """The words of ``clause`` did not fit: point at token ``reached`` (the first one no
    form could read), give ``reason`` if known and the forms of ``verb``."""
    family = ALIASES.get(verb, verb)
    if family not in HELP:
        word = clause.tokens[min(reached, len(clause.tokens) - 1)].text
        lead = f'I do not know the verb "{word}" (in "{window(clause, reached)}").'
        body = reason or f"Start with one of: {KNOWN_VERBS}."
        return UnreadableRequest(clause.text, f"{lead} {body} Say it another way.")
    if reached >= len(clause.tokens) and reason:
        # Every word was read and the reason says what was wrong with them: "stops short"
        # would blame a missing word that is not missing.
        lead = f'I could not do "{window(clause, reached)}".'
    elif reached >= len(clause.tokens):
        lead = f'"{window(clause, reached)}" stops short: something is missing at the end.'
    else:
        word = clause.tokens[reached].text
        lead = f'I did not understand "{word}" in "{window(clause, reached)}".'
    said = f" {reason}" if reason else ""
    text = f"{lead}{said} Say it another way; {family} reads:\n  {HELP[family]}"
    return UnreadableRequest(clause.text, text)


def no_tool(clause: Clause, why: str) -> UnreadableRequest:
    """Nothing blendmesh has can do what ``clause`` asks."""
    return UnreadableRequest(
        clause.text, f'No tool does this: "{window(clause, 0)}": {why}.', NO_TOOL
    )


def missing_tool(clause: Clause, tool: str) -> UnreadableRequest:
    """The grammar reads the clause, but the connected bridge lacks the tool it needs."""
    return UnreadableRequest(
        clause.text,
        f'No tool does this here: "{window(clause, 0)}" needs the tool "{tool}", which is '
        "not available in the tool catalog of the connected Blender bridge.",
        NO_TOOL,
    )


def unknown_object(clause: Clause, name: str, suggestion: str | None) -> UnreadableRequest:
    """``name`` is in no object of the scene nor made by the plan before this clause."""
    at = next((i for i, t in enumerate(clause.tokens) if str(t.value) == name), 0)
    hint = (
        f' Did you mean "{suggestion}"?'
        if suggestion
        else " Check the name (describe the scene lists them)."
    )
    return UnreadableRequest(
        clause.text,
        f'There is no object "{name}" in the scene (in "{window(clause, at)}").{hint}',
    )


def with_rest(exc: UnreadableRequest, clauses: list[Clause], index: int) -> UnreadableRequest:
    """``exc`` for clause ``index`` of a longer request: nothing runs, and the message names
    the failing clause and the clauses around it that read, so only that part is retyped."""
    if len(clauses) < 2:
        return exc
    failed = clauses[index].text
    read = [c.text for c in clauses[:index]]
    unread = len(clauses) - index - 1
    parts = [f'Nothing was run: only "{failed}" needs another wording.']
    if read:
        parts.append("Read fine: " + ", ".join(f'"{t}"' for t in read) + ".")
    if unread:
        parts.append(f"Not read yet: {unread} clause{'s' if unread > 1 else ''} after it.")
    parts.append("Send the request again with that clause fixed or left out.")
    return UnreadableRequest(exc.unread, f"{exc.message}\n{' '.join(parts)}", exc.kind)
