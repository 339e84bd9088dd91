"""Observe (or interrupt) a drop through its log: the steps it logs at INFO on the
``delta_downgrade.drop`` logger, the ones the CLI and the tasks print."""

from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterator

from delta_downgrade.drop.run import LOGGER


class StepHandler(logging.Handler):
    """Records each step's message, then calls ``on_step`` with it. Whatever ``on_step`` raises
    propagates out of the logging call into the drop (``Handler.handle`` calls ``emit`` without
    catching; only ``StreamHandler``-like handlers route their own errors to ``handleError``),
    so a test can stop a drop right after any step."""

    def __init__(self, on_step: Callable[[str], None] | None = None) -> None:
        super().__init__(logging.INFO)
        self.steps: list[str] = []
        self.on_step = on_step

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.steps.append(message)
        if self.on_step is not None:
            self.on_step(message)


@contextlib.contextmanager
def drop_steps(on_step: Callable[[str], None] | None = None) -> Iterator[list[str]]:
    """The list of steps the drops inside the block log (INFO and above), in order; ``on_step``
    is called after each one is recorded."""
    handler = StepHandler(on_step)
    level = LOGGER.level
    LOGGER.setLevel(logging.INFO)
    LOGGER.addHandler(handler)
    try:
        yield handler.steps
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
