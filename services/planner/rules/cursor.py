"""The token cursor of the rules grammar: names, numbers, vectors, colors and parameters.

Every reader either consumes what it reads or raises ``NoParse``; clause forms that try
alternatives save and restore ``Cursor.pos``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from contracts.errors import BlendmeshError
from services.planner.rules.lexer import Token
from services.planner.rules.scene import Stage
from services.planner.rules.vocab import (
    ARTICLES,
    COLORS,
    CONNECTORS,
    MODIFIER_DEFAULT_NAMES,
    MODIFIERS,
    srgb_hex_to_linear,
)
from services.planner.rules.words import LENGTH_UNITS

V = TypeVar("V")
# "the lamp" is the scene's only light when no object is called "lamp".
ONLY_KINDS = {"light": "LIGHT", "lamp": "LIGHT", "camera": "CAMERA"}
DEGREE_WORDS = ("degrees", "degree", "deg")
MAX_NAME_LENGTH = 63
Number = int | float


class NoParse(BlendmeshError):
    """The clause does not fit the form being tried; ``reason`` says why, if known."""

    def __init__(self, reason: str = "", at: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        # The token the reason is about, when it is not the furthest one read: "20 rows of
        # 20 cubes" is refused for its count, not for "cubes".
        self.at = at
        self.reached = 0  # set by parse_clause: the first token no form could read
        self.verb = ""  # set by parse_clause: the clause's verb, if it had one


class Cursor:
    """A position in the tokens of one clause, and what the planner knows of the scene.

    ``reached`` is the furthest position any attempt read up to: the token there is the
    first one no form could read, which is what a refusal points at.
    """

    def __init__(
        self, tokens: tuple[Token, ...], it_name: str | None, stage: Stage | None = None
    ) -> None:
        self.tokens = tokens
        self._pos = 0
        self.reached = 0
        self.it_name = it_name
        self.stage = stage if stage is not None else Stage(None)

    @property
    def pos(self) -> int:
        return self._pos

    @pos.setter
    def pos(self, value: int) -> None:
        self._pos = value
        self.reached = max(self.reached, value)

    # -- basics -----------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token | None:
        index = self.pos + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def end(self) -> None:
        if not self.at_end():
            raise NoParse()

    def take(self) -> Token:
        """The next token, consumed but not yet counted as read: the caller calls
        ``read()`` once it accepts it, so a refusal points at a token it refused."""
        token = self.peek()
        if token is None:
            raise NoParse()
        self._pos += 1
        return token

    def read(self) -> None:
        """Count everything up to the current position as read."""
        self.reached = max(self.reached, self._pos)

    def word(self, *words: str) -> str | None:
        """Consume the next token if it is one of ``words`` (any case); return it lower-cased."""
        token = self.peek()
        if token is not None and token.lower in words:
            self.pos += 1
            return token.lower
        return None

    def expect(self, *words: str) -> str:
        found = self.word(*words)
        if found is None:
            raise NoParse()
        return found

    def phrase(self, table: dict[tuple[str, ...], V]) -> V | None:
        """Consume the longest word sequence that is a key of ``table``."""
        for key in sorted(table, key=len, reverse=True):
            if all((tok := self.peek(i)) is not None and tok.lower == w for i, w in enumerate(key)):
                self.pos += len(key)
                return table[key]
        return None

    def skip_article(self) -> None:
        """Drop "a"/"an"/"the" before a fixed word (primitive, modifier, "material", ...)."""
        token = self.peek()
        if token is not None and token.lower in ARTICLES and self.peek(1) is not None:
            self.pos += 1

    def skip_the(self) -> None:
        """Drop "the" before a name; "the" followed by a connector word is a name itself."""
        token, following = self.peek(), self.peek(1)
        if (
            token is not None
            and token.lower == "the"
            and following is not None
            and following.kind in ("WORD", "STRING")
            and following.lower not in CONNECTORS
        ):
            self.pos += 1

    # -- names ------------------------------------------------------------------------
    def literal_name(self) -> str:
        """A bare identifier or a quoted string, exactly as written."""
        token = self.take()
        if token.kind not in ("WORD", "STRING") or not str(token.value):
            raise NoParse()
        if len(str(token.value)) > MAX_NAME_LENGTH:
            raise NoParse(f"Names are at most {MAX_NAME_LENGTH} characters long (Blender's limit).")
        self.read()
        return str(token.value)

    def name(self) -> str:
        """An object reference: optional "the", then a name; bare ``it`` (or ``this``) is
        the object just made, or the active one in the person's Blender."""
        copy = self._the_copy() or self._the_only()
        if copy is not None:
            return copy
        self.skip_the()
        token = self.peek()
        if token is not None and token.lower in ("it", "this"):
            if self.it_name is None:
                raise NoParse(
                    f'"{token.text}" does not refer to a named object here; select one in '
                    "Blender, or name the object (add a cube named Box) and use its name, "
                    f'or quote a literal "{token.text}".'
                )
            self.pos += 1
            if token.lower == "this":
                self.word("one", "object")  # "this one", "this object"
            return self.it_name
        written = self.literal_name()
        if token is None or token.kind != "WORD":
            return written
        name = self.stage.spelled(written)
        kind = thing.type if (thing := self.stage.things.get(name)) is not None else ""
        if kind == "LIGHT":
            self.word("light", "lamp")  # "the key light" is Key
        elif kind == "CAMERA":
            self.word("camera")
        return name

    def _the_copy(self) -> str | None:
        """``the copy|duplicate|clone``: the newest object a duplicate made, this run or the
        thread's previous one; None when the words are not next."""
        token, following = self.peek(), self.peek(1)
        if not (token is not None and token.lower in ("the", "that", "this")):
            return None
        if following is None or following.lower not in ("copy", "duplicate", "clone"):
            return None
        if self.stage.exists(str(following.value)):
            return None  # an object really named "copy" wins
        if self.stage.last_copy is None:
            raise NoParse(
                f'"the {following.text}" refers to the last object a duplicate made, and '
                "nothing was duplicated in this request or the one before; name the object."
            )
        self.pos += 2
        return self.stage.last_copy

    def _the_only(self) -> str | None:
        """``the light|lamp|camera`` when no object has that name: the scene's only one."""
        token, following = self.peek(), self.peek(1)
        if token is None or token.lower != "the" or following is None:
            return None
        kind = ONLY_KINDS.get(following.lower)
        if kind is None or not self.stage.known:
            return None
        if self.stage.exists(self.stage.spelled(str(following.value))):
            return None
        names = self.stage.of_type(kind)
        if len(names) != 1:
            which = ", ".join(names) if names else "none"
            raise NoParse(f'"the {following.text}": the scene has {which}; name the one meant.')
        self.pos += 2
        return names[0]

    def modifier_ref(self) -> str:
        """A modifier: a modifier word means its default name, anything else is its name."""
        self.skip_the()
        mtype = self.phrase(MODIFIERS)
        token = self.peek()
        if mtype is None and token is not None and token.lower in CONNECTORS:
            raise NoParse()
        name = MODIFIER_DEFAULT_NAMES[mtype] if mtype else self.literal_name()
        self.word("modifier")
        return name

    # -- numbers and vectors ----------------------------------------------------------
    def number(self) -> Number:
        token = self.take()
        if token.kind != "NUMBER" or isinstance(token.value, str):
            raise NoParse()
        self.read()
        return token.value

    def length(self) -> Number:
        """A number and its length unit, if one follows, in metres: ``4 cm`` is 0.04."""
        value = self.number()
        unit = self.word(*LENGTH_UNITS)
        if unit is None or LENGTH_UNITS[unit] == 1:
            return value
        metres = round(value * LENGTH_UNITS[unit], 6)
        return int(metres) if metres == int(metres) else metres

    def _numbers_ahead(self) -> int:
        count = 0
        while (tok := self.peek(count)) is not None and tok.kind == "NUMBER":
            count += 1
        return count

    def vector(self) -> list[Number]:
        """``x y z`` or ``(x, y, z)`` (commas inside the parentheses are optional)."""
        token = self.peek()
        if token is not None and token.kind == "LPAREN":
            self.pos += 1
            values = [self.number()]
            for _ in range(2):
                if (tok := self.peek()) is not None and tok.kind == "COMMA":
                    self.pos += 1
                values.append(self.number())
            if self.take().kind != "RPAREN":
                raise NoParse()
            self.read()
            return values
        if self._numbers_ahead() != 3:
            raise NoParse()
        return [self.number(), self.number(), self.number()]

    def location(self) -> list[Number]:
        """A vector, or ``[the] origin`` for 0 0 0."""
        self.skip_article()
        if self.word("origin"):
            return [0, 0, 0]
        return self.vector()

    def number_or_vector(self) -> list[Number]:
        """A vector, or one number ``n`` meaning ``n n n``."""
        token = self.peek()
        if token is not None and (token.kind == "LPAREN" or self._numbers_ahead() == 3):
            return self.vector()
        value = self.number()
        return [value, value, value]

    def degrees(self) -> None:
        """An optional unit after a rotation: ``degrees``, ``degree``, ``deg`` or ``°``."""
        token = self.peek()
        if token is not None and (token.kind == "DEG" or token.lower in DEGREE_WORDS):
            self.pos += 1

    def unit(self, what: str) -> Number:
        """A number in 0..1 (metallic, roughness)."""
        value = self.number()
        if not 0 <= value <= 1:
            raise NoParse(f"{what.capitalize()} must be a number between 0 and 1.")
        return value

    # -- colors and parameter values --------------------------------------------------
    def color_word(self) -> list[float] | None:
        """A named color or ``#rrggbb`` if one is next (consumed), else None."""
        token = self.peek()
        if token is None:
            return None
        if token.lower in COLORS:
            self.pos += 1
            return list(COLORS[token.lower])
        if token.kind == "HEX":
            self.pos += 1
            return srgb_hex_to_linear(str(token.value))
        return None

    def color(self) -> list[Any]:
        """A named color, ``#rrggbb`` (sRGB, converted to linear) or three numbers in 0..1."""
        named = self.color_word()
        if named is not None:
            return named
        values = self.vector()
        if not all(0 <= v <= 1 for v in values):
            raise NoParse("Color components must be numbers between 0 and 1.")
        return values

    def param_name(self) -> str:
        """A modifier parameter: one bare word (not a connector), exactly as written."""
        token = self.take()
        if token.kind != "WORD" or token.lower in CONNECTORS:
            raise NoParse()
        self.read()
        return token.text

    def value(self) -> Any:
        """A parameter value: vector, number, true/false, bare word or quoted string."""
        token = self.take()
        if token.kind == "LPAREN" or (token.kind == "NUMBER" and self._numbers_ahead() == 2):
            self._pos -= 1
            return self.vector()
        if token.kind not in ("NUMBER", "WORD", "STRING"):
            raise NoParse()
        if (
            token.kind == "NUMBER"
            and (unit := self.peek()) is not None
            and unit.lower in LENGTH_UNITS
        ):
            self._pos -= 1
            return self.length()  # "width 2 cm": metres, what a modifier's lengths are in
        self.read()
        if token.lower in ("true", "false"):
            return token.lower == "true"
        return token.value

    def params(self) -> dict[str, Any]:
        """One or more ``<param> <value>`` or ``<param>=<value>`` pairs, to the clause end."""
        properties: dict[str, Any] = {}
        while True:
            if (token := self.peek()) is not None and token.kind == "NUMBER":
                # "with 2 levels", "3 segments": Blender's panels put the number first.
                value = self.length()
                param = self.param_name()
                if param in properties:
                    raise NoParse(f'The parameter "{param}" is given twice.')
                properties[param] = value
                self.word("and")
                if self.at_end():
                    return properties
                continue
            param = self.param_name()
            if (eq := self.peek()) is not None and eq.kind == "EQ":
                self.pos += 1
            if param in properties:
                raise NoParse(f'The parameter "{param}" is given twice.')
            properties[param] = self.value()
            self.word("and")
            if self.at_end():
                return properties


Plan = tuple[str, dict[str, Any]]
Plans = Plan | list[Plan]  # a clause may stand for several operations ("three cubes")
Form = Callable[[Cursor], Plans]


def first(cur: Cursor, *forms: Form) -> Plans:
    """The first form that reads the rest of the clause; else the first reason given."""
    start = cur.pos
    reasons: list[NoParse] = []
    for form in forms:
        cur.pos = start
        try:
            return form(cur)
        except NoParse as exc:
            if exc.reason:
                reasons.append(exc)
    raise NoParse(reasons[0].reason, reasons[0].at) if reasons else NoParse()


def once(seen: dict[str, Any], key: str, value: Any, word: str) -> None:
    if key in seen:
        raise NoParse(f'"{word}" is given twice.')
    seen[key] = value
