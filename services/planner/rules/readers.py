"""Readers of the rules grammar built on the cursor: counts, object lists and groups,
amounts, axes and the adjectives of a create ("a dark blue metallic sphere")."""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools.defaults import DEFAULT_NAMES
from services.planner.rules.cursor import Cursor, NoParse, Number
from services.planner.rules.lexer import Token
from services.planner.rules.places import shape_of
from services.planner.rules.sizes import singular
from services.planner.rules.vocab import COLORS, CONNECTORS, PRIMITIVES
from services.planner.rules.words import (
    AXES,
    DARK,
    DIRECTIONS,
    EVERYTHING,
    LIGHT,
    LIGHT_TINTS,
    NUMBER_WORDS,
    OBJECT_WORDS,
    PLURALS,
    SHADE_WORDS,
    SURFACE_WORDS,
    TYPE_GROUPS,
    UNIT_WORDS,
)

TINTS = {"warm": LIGHT_TINTS["warm"], "cool": LIGHT_TINTS["cool"]}
TONES = frozenset({DARK, LIGHT, "pale", "deep", "bright", *TINTS})
NUDGE_DISTANCE = 0.5  # "move Box a bit to the right"
MAX_COUNT = 100  # objects one clause may create or copy
MAX_TARGETS = 500  # objects one clause may name or a group may stand for


def count(cur: Cursor) -> int | None:
    """A count if one is next: ``3``, ``three``, ``a couple of``; None (nothing read) if not."""
    token = cur.peek()
    if token is None:
        return None
    if token.kind == "NUMBER":
        value = token.value
        if not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
            raise NoParse(f"A count must be a whole number from 1 to {MAX_COUNT}.")
        cur.pos += 1
        return value
    if token.lower in NUMBER_WORDS:
        cur.pos += 1
        cur.word("of")
        return NUMBER_WORDS[token.lower]
    return None


def _group(cur: Cursor) -> tuple[str, list[str]] | None:
    """``everything``, ``all [the] objects``, ``all cubes``, ``every light``: the word said
    and the names it stands for, or None when no group word is next."""
    start = cur.pos
    chosen = _selected(cur) or _them(cur)
    if chosen is not None:
        return chosen
    said = cur.word("everything", "all", "every", "each", "both")
    if said is None:
        return _named_like(cur)
    stage = cur.stage
    if said == "everything":  # "everything light blue": the color follows, not a kind
        return _everything(cur, start)
    cur.word("the", "of")
    cur.word("the")
    names: list[str] | None = None
    at = cur.pos
    plural = cur.phrase(PLURALS) or cur.phrase(PRIMITIVES)
    if plural is not None:
        names = stage.like(plural, DEFAULT_NAMES[plural])
        if not names:  # "all cylinders" are the posts too: Post is made as a cylinder
            names = [n for n in stage.of_type("MESH") if shape_of(n) == plural]
        if not names and cur.pos == at + 1:  # "both boxes", none made as a cube: Box, Box.001
            names = stage.named_like(singular(cur.tokens[at].lower) or "")
    elif (kind := cur.word(*TYPE_GROUPS)) is not None:
        names = stage.of_type(TYPE_GROUPS[kind])
    elif (stem := _stem(cur, plural=said in ("all", "both"))) is not None:
        names = stage.named_like(stem)
    elif cur.word(*OBJECT_WORDS) is not None or said in EVERYTHING:
        cur.word("in")
        if cur.word("the"):
            cur.expect("scene")
        names = stage.everything()
    if names is None:
        cur.pos = start
        return None
    what = " ".join(t.text for t in cur.tokens[start : cur.pos])
    if not stage.known:
        raise NoParse(
            f'"{what}" needs the scene\'s contents, which the planner was not given here; '
            "name the objects instead."
        )
    if not names:
        raise NoParse(f'"{what}" stands for no object: the scene has none of them.')
    if said == "both" and len(names) != 2:
        raise NoParse(f'"{what}" stands for {len(names)} objects: {", ".join(names[:8])}.')
    return what, names[:MAX_TARGETS]


SELECTED_NOUNS = ("ones", "one", "objects", "object", "things")


def _them(cur: Cursor) -> tuple[str, list[str]] | None:
    """``them``, ``they``, ``those``: the objects the clause before made (else touched),
    in this request or the thread's previous run; None when the word is not next or an
    object has that name."""
    token = cur.peek()
    if token is None or token.lower not in ("them", "they", "those", "these"):
        return None
    if cur.stage.exists(cur.stage.spelled(token.text)):
        return None
    if not cur.stage.them:
        raise NoParse(
            f'"{token.text}" refers to the objects the request before made, and it made '
            "none; name them (make Post and Post.001 red) or say all posts."
        )
    cur.pos += 1
    cur.word("all", "both")  # "them all", "them both"
    return token.text, cur.stage.them[:MAX_TARGETS]


def _selected(cur: Cursor) -> tuple[str, list[str]] | None:
    """``[the] selected [ones|objects]``, ``[the] selection``: what the person had selected
    in Blender when asking; None when those words are not next."""
    start = cur.pos
    cur.word("the")
    if cur.word("selection") is None:
        if cur.word("selected") is None:
            cur.pos = start
            return None
        cur.word(*SELECTED_NOUNS)
    what = " ".join(t.text for t in cur.tokens[start : cur.pos])
    if cur.stage.selected is None:
        raise NoParse(
            f'"{what}" stands for what is selected in Blender, which this request did not '
            "say; ask from the Blender add-on, or name the objects."
        )
    if not cur.stage.selected:
        raise NoParse(f'"{what}" stands for no object: nothing was selected when you asked.')
    return what, cur.stage.selected[:MAX_TARGETS]


def _everything(cur: Cursor, start: int) -> tuple[str, list[str]]:
    """``everything [in the scene]``: every object of the scene."""
    cur.word("in")
    if cur.word("the"):
        cur.expect("scene")
    what = " ".join(t.text for t in cur.tokens[start : cur.pos])
    if not cur.stage.known:
        raise NoParse(
            f'"{what}" needs the scene\'s contents, which the planner was not given here; '
            "name the objects instead."
        )
    names = cur.stage.everything()
    if not names:
        raise NoParse(f'"{what}" stands for no object: the scene has none of them.')
    return what, names[:MAX_TARGETS]


def _stem(cur: Cursor, plural: bool) -> str | None:
    """A common noun the scene's names are numbered from ("posts": Post, Post.001), read."""
    token = cur.peek()
    if token is None or token.kind != "WORD" or not cur.stage.known:
        return None
    word = singular(token.lower) if plural else token.lower
    if word is None or not cur.stage.named_like(word):
        return None
    cur.pos += 1
    return word


def _named_like(cur: Cursor) -> tuple[str, list[str]] | None:
    """``[the] <plural noun>`` when no object has that name: the objects numbered from it."""
    start = cur.pos
    cur.word("the")
    token = cur.peek()
    if token is not None and not cur.stage.exists(cur.stage.spelled(str(token.value))):
        stem = _stem(cur, plural=True)
        if stem is not None:
            what = " ".join(t.text for t in cur.tokens[start : cur.pos])
            return what, cur.stage.named_like(stem)[:MAX_TARGETS]
    cur.pos = start
    return None


def targets(cur: Cursor) -> list[str]:
    """Objects: a group (``everything``, ``all cubes``) or names joined by ``,`` / ``and``.

    A quoted "everything" is the object of that name, never the group.
    """
    group = _group(cur)
    if group is not None:
        return group[1]
    names = [cur.name()]
    while len(names) < MAX_TARGETS:
        token, following = cur.peek(), cur.peek(1)
        if token is None or not (token.kind == "COMMA" or token.lower == "and"):
            break
        if token.kind == "COMMA" and following is not None and following.lower == "and":
            cur.pos += 1
            following = cur.peek(1)
        if following is None or following.kind not in ("WORD", "STRING"):
            break
        if following.lower in CONNECTORS:
            break
        cur.pos += 1
        names.append(cur.name())
    return list(dict.fromkeys(names))


def amount(cur: Cursor) -> Number:
    """A distance: a number or ``half a``, then an optional unit word."""
    if cur.word("slightly"):
        return NUDGE_DISTANCE
    if cur.word("half"):
        cur.word("a", "an")
        value: Number = 0.5
    elif cur.word("a"):
        if cur.word("bit", "little"):
            return NUDGE_DISTANCE
        cur.expect(*UNIT_WORDS)  # "a meter"
        return 1
    else:
        return cur.length()
    cur.word(*UNIT_WORDS)
    return value


def axis(cur: Cursor) -> int:
    """``[the] x|y|z [axis]`` -> 0, 1 or 2."""
    cur.skip_article()
    found = cur.expect(*AXES)
    cur.word("axis")
    return AXES.index(found)


def along(value: Number, index: int) -> list[Number]:
    """A vector with ``value`` on one axis and 0 on the others."""
    return [value if i == index else 0 for i in range(3)]


def shade_of(cur: Cursor) -> list[float] | None:
    """A color word, optionally toned before it (``dark``, ``light``, ``pale``, ``deep``,
    ``bright``, ``warm``, ``cool``), or ``#rrggbb``; None (nothing read) if none."""
    token, following = cur.peek(), cur.peek(1)
    tone = token.lower if token is not None else ""
    if tone in TONES and following is not None and following.lower in COLORS:
        cur.pos += 2
        return toned(tone, COLORS[following.lower])
    return cur.color_word()


def toned(tone: str, base: list[float]) -> list[float]:
    """``base`` darker (x0.2, or x0.5 for deep), halfway to white, or tinted warm/cool."""
    if tone in TINTS:
        return [round(c * t, 4) for c, t in zip(base, TINTS[tone], strict=True)]
    if tone in (LIGHT, "pale"):
        return [round(c * 0.5 + 0.5, 4) for c in base]
    factor = {DARK: 0.2, "deep": 0.5}.get(tone, 1.0)
    return [round(c * factor, 4) for c in base]


def adjectives(cur: Cursor) -> dict[str, Any]:
    """Adjectives before a thing, in any order: a color, metallic/rough/glossy/..., smooth|
    flat. Returns material values under their material.assign keys and ``smooth``."""
    found: dict[str, Any] = {}
    while (token := cur.peek()) is not None:
        if found and (token.kind == "COMMA" or token.lower == "and") and _adjective(cur.peek(1)):
            cur.pos += 1  # "grey and rough", "dark, shiny"
            continue
        mild = _mild(cur)
        color = None if mild else shade_of(cur)
        if color is not None:
            _once(found, "base_color", color, token.text)
        elif (word := cur.peek()) is not None and word.lower in SURFACE_WORDS:
            cur.pos += 1
            key, value = SURFACE_WORDS[word.lower]
            _once(found, key, round((value + 0.5) / 2, 4) if mild else value, word.text)
        elif mild:
            raise NoParse(f'"{token.text}" goes before metallic, rough, shiny, ... only.')
        elif token.lower in SHADE_WORDS:
            cur.pos += 1
            _once(found, "smooth", SHADE_WORDS[token.lower], token.text)
        else:
            return found
    return found


def _mild(cur: Cursor) -> bool:
    """``a bit|a little|slightly|somewhat`` before a surface word: halfway to 0.5 (the
    default); read and True if said."""
    token, following = cur.peek(), cur.peek(1)
    if token is None:
        return False
    if token.lower == "a" and following is not None and following.lower in ("bit", "little"):
        after = cur.peek(2)
        if after is not None and after.lower in SURFACE_WORDS:
            cur.pos += 2
            return True
    if token.lower in ("slightly", "somewhat"):
        cur.pos += 1
        return True
    return False


def _adjective(token: Token | None) -> bool:
    if token is None:
        return False
    word = token.lower
    known = COLORS.keys() | TONES | SURFACE_WORDS.keys() | SHADE_WORDS.keys()
    return word in known or word in ("a", "slightly", "somewhat")


def _once(found: dict[str, Any], key: str, value: Any, word: str) -> None:
    if key in found:
        raise NoParse(f'"{word}" says the {key.replace("base_", "")} a second time.')
    found[key] = value


def direction(cur: Cursor) -> list[Number] | None:
    """``up|down|left|right|forward|back [by] <n> [units]`` or ``<n> [units] up|...``."""
    to_the(cur)
    token = cur.peek()
    if token is not None and token.lower in DIRECTIONS:
        cur.pos += 1
        cur.word("by")
        value = amount(cur)
    elif token is not None and (token.kind == "NUMBER" or token.lower in ("half", "a")):
        value = amount(cur)
        to_the(cur)
        token = cur.peek()
        if token is None or token.lower not in DIRECTIONS:
            return None
        cur.pos += 1
    else:
        return None
    index, sign = DIRECTIONS[token.lower]
    return along(value * sign, index)


def to_the(cur: Cursor) -> None:
    """An optional ``to the`` before a direction: "2 meters to the left"."""
    token, following = cur.peek(), cur.peek(1)
    ahead = cur.peek(2) if following is not None and following.lower == "the" else following
    if (
        token is not None
        and token.lower == "to"
        and ahead is not None
        and ahead.lower in DIRECTIONS
    ):
        cur.pos += 1
        cur.word("the")
