"""Tokenizer and clause splitter of the rules planner grammar (see docs/grammar.md).

Lexing never fails: a character the grammar has no use for becomes an ``OTHER`` token,
so the clause holding it is reported as unreadable, quoted exactly as the user typed it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Order matters: quoted strings first (so nothing inside them is split), then an
# unterminated quote (swallows the rest of the text), hex colors, numbers, names, marks.
_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | "(?P<dq>[^"]*)"
  | \u201c(?P<cq>[^\u201d]*)\u201d
  | (?P<unterminated>["\u201c].*)
  | (?P<hex>\#[0-9A-Fa-f]{6})(?![0-9A-Za-z_])
  | (?P<number>[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<word>[A-Za-z_](?:[A-Za-z0-9_]|[.\-'\u2019](?=[A-Za-z0-9_]))*)
  | (?P<mark>[(),;.=%?!\u00b0])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_MARKS = {
    "(": "LPAREN",
    ")": "RPAREN",
    ",": "COMMA",
    ";": "SEMI",
    ".": "PERIOD",
    "=": "EQ",
    "%": "PERCENT",
    "?": "PERIOD",  # a question or an exclamation ends a sentence like a period
    "!": "PERIOD",
    "\u00b0": "DEG",
}
_SEPARATOR_KINDS = frozenset({"COMMA", "SEMI", "PERIOD"})
_SEPARATOR_WORDS = frozenset({"and", "then"})


@dataclass(frozen=True, slots=True)
class Token:
    """One lexeme: its kind, its exact source text, its value and its span in the text.

    Kinds: WORD, STRING, NUMBER, HEX, LPAREN, RPAREN, COMMA, SEMI, PERIOD, EQ, PERCENT, DEG,
    OTHER.
    ``value`` is the name/string for WORD and STRING (case preserved), the int or float
    for NUMBER, the six hex digits for HEX and the source text otherwise.
    """

    kind: str
    text: str
    value: str | int | float
    start: int
    end: int

    @property
    def lower(self) -> str:
        """The lower-cased word for WORD tokens, "" for any other kind."""
        return self.text.lower() if self.kind == "WORD" else ""


@dataclass(frozen=True, slots=True)
class Clause:
    """The tokens of one clause and the exact source text they span."""

    tokens: tuple[Token, ...]
    text: str


def _number(text: str) -> int | float:
    if re.fullmatch(r"[-+]?\d+", text):
        try:
            return int(text)
        except ValueError:  # over Python's 4300-digit limit: infinite, refused by validation
            return float(text)
    return float(text)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (whitespace dropped); never raises."""
    tokens: list[Token] = []
    for match in _TOKEN_RE.finditer(text):
        group = match.lastgroup
        raw = match.group(0)
        start, end = match.span()
        if group == "ws":
            continue
        if group == "dq" or group == "cq":
            tokens.append(Token("STRING", raw, match.group(group), start, end))
        elif group == "hex":
            tokens.append(Token("HEX", raw, raw[1:], start, end))
        elif group == "number":
            tokens.append(Token("NUMBER", raw, _number(raw), start, end))
        elif group == "word":
            tokens.append(Token("WORD", raw, raw, start, end))
        elif group == "mark":
            tokens.append(Token(_MARKS[raw], raw, raw, start, end))
        else:  # "unterminated" or "other"
            tokens.append(Token("OTHER", raw, raw, start, end))
    return _possessives(tokens)


# Words with 's that are not possessives: "it's red", "what's in the scene".
_CONTRACTIONS = frozenset(
    {"it", "that", "what", "there", "here", "let", "who", "where", "how", "he", "she"}
)


def _possessives(tokens: list[Token]) -> list[Token]:
    """``the [key] light's power`` read as ``the power of the [key] light``: the grammar's
    forms name a part or setting before its object ("the power of Lantern"), and artists
    write the possessive. The owner is the word before 's, with the words back to a ``the``
    at most two before it. Each token made keeps the span of the word it came from, so a
    refusal still quotes what was typed."""
    found: list[Token] = []
    i = 0
    while i < len(tokens):
        token, following = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else None
        owner = token.text[:-2]
        if (
            token.kind == "WORD"
            and token.text[-2:].lower() in ("'s", "\u2019s")
            and owner.lower() not in _CONTRACTIONS
            and following is not None
            and following.kind == "WORD"
        ):
            the = next(
                (j for j in range(len(found) - 1, max(len(found) - 4, -1), -1)
                 if found[j].lower == "the"),
                None,
            )  # fmt: skip
            words = [] if the is None else found[the + 1 :]
            if the is not None and all(w.kind == "WORD" for w in words):
                del found[the + 1 :]
                lead = [Token("WORD", "the", "the", token.start, token.start)]
            else:
                words, lead = [], []
            of = Token("WORD", "of", "of", token.start, token.start)
            last = Token("WORD", owner, owner, token.start, following.end)
            found += [following, of, *lead, *words, last]
            i += 2
            continue
        found.append(token)
        i += 1
    return found


def _is_separator(token: Token) -> bool:
    return token.kind in _SEPARATOR_KINDS or token.lower in _SEPARATOR_WORDS


# Whether the tokens from an index on start a new clause (the grammar's verbs do).
Starts = Callable[[Sequence[Token], int], bool]


def _splits(run: list[Token], tokens: Sequence[Token], after: int, starts: Starts | None) -> bool:
    """Whether a run of separators ends a clause. ``;``, ``.`` and ``then`` always do; a run
    of only ``,`` and ``and`` does when a clause starts after it, so lists ("Box, Ball and
    Cone") and sizes (", 2 meters apart", "and 3 m high") stay inside their clause."""
    if starts is None or any(t.kind in ("SEMI", "PERIOD") or t.lower == "then" for t in run):
        return True
    following = tokens[after] if after < len(tokens) else None
    if following is None or following.kind not in ("WORD", "STRING", "NUMBER"):
        return True
    return starts(tokens, after)


def split_clauses(text: str, starts: Starts | None = None) -> list[Clause]:
    """Split a request into clauses at separators outside parentheses and quotes.

    Separators are ``,`` ``;`` ``.`` and the words ``and`` / ``then``; a run of them
    (", and then") is one separator and empty clauses are dropped. With ``starts``, a run
    of only ``,`` / ``and`` separates only where ``starts`` says a clause begins.
    """
    tokens = tokenize(text)
    clauses: list[Clause] = []
    current: list[Token] = []
    depth = 0

    def close() -> None:
        if current:
            span = text[current[0].start : current[-1].end]
            clauses.append(Clause(tuple(current), span))
            current.clear()

    index = 0
    while index < len(tokens):
        token = tokens[index]
        if depth == 0 and _is_separator(token):
            run_end = index
            while run_end < len(tokens) and _is_separator(tokens[run_end]):
                run_end += 1
            run = list(tokens[index:run_end])
            if not current or _splits(run, tokens, run_end, starts):
                close()
            else:
                current.extend(run)
            index = run_end
            continue
        if token.kind == "LPAREN":
            depth += 1
        elif token.kind == "RPAREN":
            depth = max(0, depth - 1)
        current.append(token)
        index += 1
    close()
    return clauses
