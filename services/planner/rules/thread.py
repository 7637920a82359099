"""What the rules grammar carries over from the thread's previous run (docs/grammar.md).

A person types "make it red" or "again" right after the run that made the object. The
previous run's request and planned operations are enough to read those words the same way
every time: ``it`` starts as the object that run made (else touched) last, ``the copy`` as
the last object it duplicated, and ``again`` reads that run's request once more against
the scene as it is now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from services.planner.rules.cursor import Plan
from services.planner.rules.lexer import Clause, tokenize
from services.planner.rules.names import created, touched

AGAIN = frozenset({"again", "repeat", "more", "same", "once", "do", "that", "it", "the", "please"})


@dataclass(frozen=True)
class EarlierRun:
    """The thread's previous run: the request as typed and the operations planned for it
    (tool name, args), in order."""

    text: str
    plans: Sequence[Plan] = field(default_factory=tuple)
    copy: str | None = None  # what "the copy" meant before that run, if anything
    it: str | None = None  # what "it" meant before that run (kept across a question)

    def then(self, text: str, plans: Sequence[Plan]) -> EarlierRun:
        """The run after this one, as the one before the next request."""
        said = self.text if is_again(Clause(tuple(tokenize(text)), text)) else text
        copy = last_copy(self.plans) or self.copy
        return EarlierRun(said, tuple(plans), copy, it_after(self.plans, self.it))


def it_after(plans: Sequence[Plan], before: str | None) -> str | None:
    """What "it" means after some plans: the last object they made, else the last touched."""
    made = [name for tool, args in plans if (name := created(tool, args)) is not None]
    if made:
        return made[-1]
    if any(tool == "object.create" for tool, _ in plans):
        return None  # an unnamed object cannot be referred to as "it"
    names = [n for tool, args in plans for n in touched(tool, args) if ":" not in n]
    return names[-1] if names else before


def them_after(plans: Sequence[Plan], before: Sequence[str]) -> list[str]:
    """What "them" means after some plans: the objects they made, else those they
    touched, else what it meant before."""
    made = [name for tool, args in plans if (name := created(tool, args)) is not None]
    if made:
        return list(dict.fromkeys(made))
    names = [n for tool, args in plans for n in touched(tool, args) if ":" not in n]
    return list(dict.fromkeys(names)) or list(before)


def last_copy(plans: Sequence[Plan]) -> str | None:
    """The newest object a duplicate made among ``plans``, if any."""
    copies = [str(args["new_name"]) for tool, args in plans if tool == "object.duplicate"]
    return copies[-1] if copies else None


def is_again(clause: Clause) -> bool:
    """``again``, ``do it again``, ``same again``, ``once more``, ``repeat that``."""
    words = [t.lower for t in clause.tokens]
    return (
        bool(words)
        and all(words)
        and set(words) <= AGAIN
        and bool({"again", "repeat", "more"} & set(words))
    )
