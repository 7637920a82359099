"""The render contract every door shares: what a person may ask, refused by name, what a
job costs, and how a job's events fold (docs/renders.md)."""

from __future__ import annotations

import pytest

from contracts.event_base import derive_event_id
from contracts.events import decode_event, encode_event, follow
from contracts.render_events import (
    FrameRendered,
    RenderCancelRequested,
    RenderEnded,
    RenderRequested,
)
from contracts.render_fold import fold_job
from contracts.renders import (
    MAX_FRAME,
    MAX_JOB_FRAMES,
    RenderRefused,
    frame_object,
    parse_frames,
    parse_size,
    spec_of,
)


def ok(first: int = 1, last: int = 24, engine: str = "cycles", samples: int = 1,
       width: int = 32, height: int = 32) -> object:  # fmt: skip
    return spec_of(first, last, engine, samples, width, height)


def test_parse_frames_when_a_range_or_one_frame_gives_first_and_last() -> None:
    assert parse_frames("1-240") == (1, 240)
    assert parse_frames(" 7 ") == (7, 7)
    assert parse_frames("-3") == (-3, -3)  # a negative frame, refused by spec_of by name


@pytest.mark.parametrize("text", ["", "a-b", "1-2-3", "1..9", "1-" + "9" * 20, "x" * 5000])
def test_parse_frames_when_not_a_range_refuses_naming_the_form(text: str) -> None:
    with pytest.raises(RenderRefused, match="FIRST-LAST") as caught:
        parse_frames(text)
    assert len(str(caught.value)) < 200  # an oversized input is not echoed whole


@pytest.mark.parametrize("text", ["100000", "10x", "x10", "-5x10", "1e3x10"])
def test_parse_size_when_not_width_x_height_refuses(text: str) -> None:
    with pytest.raises(RenderRefused, match="WIDTHxHEIGHT"):
        parse_size(text)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"first": 1, "last": 999_999_999}, "past Blender's last frame"),
        ({"first": -5, "last": 3}, "0 or more"),
        ({"first": 30, "last": 1}, "backwards"),
        ({"first": 0, "last": MAX_JOB_FRAMES}, "split it"),
        ({"width": 100_000, "height": 100_000}, "width 100000"),
        ({"height": 8}, "height 8"),
        ({"samples": 0}, "samples 0"),
        ({"samples": 10**9}, "samples 1000000000"),
        ({"engine": "octane"}, "engine 'octane' is unknown"),
    ],
)
def test_spec_of_when_out_of_bounds_refuses_naming_the_limit(
    args: dict[str, object], named: str
) -> None:
    with pytest.raises(RenderRefused, match=named):
        ok(**args)  # type: ignore[arg-type]


def test_spec_when_valid_costs_frames_times_samples_times_pixels() -> None:
    spec = spec_of(1, 240, "cycles", 64, 1920, 1080)
    assert spec.cost == 240 * 64 * 1920 * 1080
    assert spec_of(MAX_FRAME, MAX_FRAME, "workbench", 1, 16, 16).frames == range(
        MAX_FRAME, MAX_FRAME + 1
    )


def test_frame_object_when_same_png_twice_names_one_object_per_user() -> None:
    assert frame_object("ana", b"png") == frame_object("ana", b"png")
    assert frame_object("ana", b"png")[1].startswith("ana/")
    assert frame_object("ana", b"png")[1] != frame_object("bob", b"png")[1]


def request(last: int = 3) -> RenderRequested:
    spec = spec_of(1, last, "cycles", 1, 32, 32)
    return RenderRequested(
        event_id="e1", at=1.0, run_id="render-1", request_id="r", thread_id="render-1",
        user="ana", scene_id="shot", revision=2, spec=spec, cost=spec.cost,
    )  # fmt: skip


def frame(cause: RenderRequested, n: int, sha: str = "a" * 64) -> FrameRendered:
    return follow(cause, FrameRendered, 2.0 + n, index=n, frame=n, sha256=sha, size=10,
                  ms=1.0, executor="x")  # fmt: skip


def test_fold_job_when_a_frame_is_logged_twice_counts_it_once_and_completes() -> None:
    asked = request()
    events = [asked, frame(asked, 1), frame(asked, 1, "b" * 64), frame(asked, 2)]
    job = fold_job(events)
    assert job is not None and job.status == "rendering"
    assert [(f.frame, f.sha256[0]) for f in job.frames] == [(1, "a"), (2, "a")]
    done = fold_job([*events, frame(asked, 3)])
    assert done is not None and done.status == "completed" and done.total == 3


def test_fold_job_when_cancelled_stays_cancelled_though_an_end_says_completed() -> None:
    asked = request()
    cancel = follow(asked, RenderCancelRequested, 3.0, cancelled_by="ana")
    end = follow(asked, RenderEnded, 4.0, status="completed", frames=1)
    job = fold_job([asked, frame(asked, 1), cancel, end])
    assert job is not None and job.status == "cancelled" and job.cancelled_by == "ana"


def test_render_ended_when_built_twice_has_one_id_whatever_the_status() -> None:
    asked = request()
    done = follow(asked, RenderEnded, 1.0, status="completed", frames=3)
    cancelled = follow(asked, RenderEnded, 2.0, status="cancelled", frames=1)
    assert done.event_id == cancelled.event_id == derive_event_id("e1", "run.render_ended")
    assert decode_event(encode_event(done)) == done


def test_fold_job_when_no_request_is_none() -> None:
    assert fold_job([]) is None
