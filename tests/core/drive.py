"""Drive a ragcore pipeline with recorded effect results: no server, no network."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any


def drive(pipeline: Generator[Any, Any, Any], answer: Callable[[Any], Any]) -> tuple[Any, list]:
    """Run ``pipeline``, answering each effect with ``answer(effect)``; an exception
    ``answer`` raises is thrown into the pipeline, as the runner does with a failed effect.

    Returns the pipeline's outcome and the effects it yielded, in order.
    """
    effects: list[Any] = []
    result: Any = None
    failure: Exception | None = None
    try:
        while True:
            effect = pipeline.throw(failure) if failure else pipeline.send(result)
            effects.append(effect)
            failure = None
            try:
                result = answer(effect)
            except Exception as error:
                failure = error
    except StopIteration as done:
        return done.value, effects
