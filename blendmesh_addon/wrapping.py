"""Lines that fit the sidebar, measured in the UI font's own pixels.

Blender cuts a label that is wider than its region, mid-word and without an ellipsis in
3.4. Counting characters guesses the width ("m" is three times "i"), so a line of wide
letters was still cut; measuring each word with the font Blender draws it in does not
guess. The measuring is passed in, so this module imports nothing of Blender's.
"""

from collections.abc import Callable, Iterator

Measure = Callable[[str], float]  # a text's width in pixels, as the UI font draws it

MAX_LINES = 40  # a label column longer than this is cut with an ellipsis line


def wrap(text: str, width: float, measure: Measure) -> list[str]:
    """``text`` as lines no wider than ``width`` pixels, broken between words; a word
    wider than a whole line alone is broken inside it. Blank text is one empty line."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(_lines(paragraph.split(), width, measure) or [""])
    if len(lines) > MAX_LINES:
        lines = [*lines[: MAX_LINES - 1], "…"]
    return lines


def _lines(words: list[str], width: float, measure: Measure) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in words:
        joined = f"{line} {word}" if line else word
        if measure(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        pieces = list(_pieces(word, width, measure))
        lines.extend(pieces[:-1])
        line = pieces[-1]
    if line:
        lines.append(line)
    return lines


def _pieces(word: str, width: float, measure: Measure) -> Iterator[str]:
    """``word`` in pieces that each fit (at least one character each, so it ends)."""
    piece = ""
    for char in word:
        if piece and measure(piece + char) > width:
            yield piece
            piece = ""
        piece += char
    yield piece
