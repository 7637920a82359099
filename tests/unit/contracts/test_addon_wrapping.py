"""The panel's lines: measured in the font's pixels, broken between words, never cut.
(The panel in Debian's Blender under a real X server: tests/e2e/test_addon_gui.py.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from blendmesh_addon.wrapping import MAX_LINES, wrap

# A font where "m" and "W" are three times as wide as "i" or "l", as in Blender's.
WIDE = {"m": 12.0, "W": 12.0, "i": 4.0, "l": 4.0, " ": 4.0}


def measure(text: str) -> float:
    return sum(WIDE.get(char, 8.0) for char in text)


def test_words_of_wide_letters_move_whole_to_the_next_line() -> None:
    # Counted as 12 characters of 8 px (96 px), "ok mmmm mmmm" fits 100 px; as drawn it
    # is 120 px, and the last word moves down whole.
    lines = wrap("ok mmmm mmmm mmmm", 100, measure)
    assert lines == ["ok mmmm", "mmmm mmmm"]
    assert all(measure(line) <= 100 for line in lines)


def test_a_word_wider_than_a_line_is_broken_inside_it_and_nothing_is_lost() -> None:
    lines = wrap("a " + "W" * 20, 60, measure)
    assert lines == ["a", "WWWWW", "WWWWW", "WWWWW", "WWWWW"]


def test_newlines_start_new_lines_and_blank_text_is_one_empty_line() -> None:
    assert wrap("first\nsecond", 500, measure) == ["first", "second"]
    assert wrap("", 500, measure) == [""]
    assert wrap("a\n\nb", 500, measure) == ["a", "", "b"]


def test_a_text_longer_than_the_column_ends_with_an_ellipsis_line() -> None:
    lines = wrap(" ".join(["word"] * 400), 40, measure)
    assert len(lines) == MAX_LINES
    assert lines[-1] == "…"


@given(
    st.lists(st.text(alphabet="mWil abc", min_size=1, max_size=12), max_size=30),
    st.floats(min_value=12, max_value=400),
)
def test_every_line_fits_and_the_words_come_back_in_order(words: list[str], width: float) -> None:
    text = " ".join(words)
    lines = wrap(text, width, measure)
    assert all(measure(line) <= width for line in lines if len(line) > 1)
    if len(lines) < MAX_LINES:
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
