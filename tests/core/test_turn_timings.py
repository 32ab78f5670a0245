"""A turn's stage timings as the owner reads them: whole milliseconds that never add up
to more than the time spent, only the stages the turn reached, the model's first text
when the answer streamed."""

from __future__ import annotations

import pytest

from ragcore.chat.timings import FIRST_TEXT, STAGES, described_stages, stage_timings


def test_each_stage_reached_is_in_whole_milliseconds_rounded_down() -> None:
    timings = stage_timings({"search_ms": 0.0129, "model_ms": 1.1806, "language_ms": 0.0004})
    assert timings == {"language_ms": 0, "search_ms": 12, "model_ms": 1180}
    assert list(timings) == [s for s in STAGES if s in timings]  # in the order of a turn
    assert stage_timings({"model_ms": 0.7 - 0.4}) == {"model_ms": 300}  # not 299.99…


def test_the_stages_never_add_up_to_more_than_the_time_they_took() -> None:
    spent = {stage: 0.00199 for stage in STAGES}  # each just under 2 ms
    timings = stage_timings(spent)
    assert sum(timings.values()) <= sum(spent.values()) * 1000
    assert set(timings) == set(STAGES)


def test_the_first_text_is_there_only_when_the_answer_streamed() -> None:
    assert FIRST_TEXT not in stage_timings({"model_ms": 0.9})
    streamed = stage_timings({"model_ms": 0.9}, first_text=0.3105)
    assert streamed == {"model_ms": 900, "first_token_ms": 310}
    assert stage_timings({}) == {}


def test_a_stage_not_of_a_turn_is_a_mistake_said_by_name() -> None:
    with pytest.raises(ValueError, match="workflow_ms"):
        stage_timings({"workflow_ms": 0.1, "model_ms": 0.2})


def test_the_api_names_every_stage_with_its_meaning() -> None:
    said = described_stages()
    assert all(f"{stage} ({means})" in said for stage, means in STAGES.items())
    assert "first_token_ms (" in said
