"""Drive a ragcore pipeline with recorded effect results: no server, no network."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any


def drive(pipeline: Generator[Any, Any, Any], answer: Callable[[Any], Any]) -> tuple[Any, list]:
    """Run ``pipeline``, answering each effect with ``answer(effect)``.

    Returns the pipeline's outcome and the effects it yielded, in order.
    """
    effects: list[Any] = []
    result: Any = None
    try:
        while True:
            effect = pipeline.send(result)
            effects.append(effect)
            result = answer(effect)
    except StopIteration as done:
        return done.value, effects
