"""A stand-in for the clients matrix's `ClientProcess` (test support): it keeps ``proc`` as the
real one does - None until its first request, None again once closed - and records its starts
and the requests it answered, so that tests can count JVM starts without starting any."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class StartedOnFirstRequest:
    """Answers every request with ``answer(request)`` (an empty read by default)."""

    def __init__(self, spec: Any, log_dir: Path | None) -> None:
        self.spec = spec
        self.proc: Any = None
        self.starts = 0
        self.requests: list[dict[str, Any]] = []

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "rows": [], "columns": [], "n": len(self.requests)}

    def run(self, requests: Any) -> list[dict[str, Any]]:
        requests = list(requests)
        if self.proc is None:
            self.proc = object()
            self.starts += 1
        self.requests += requests
        return [self.answer(r) for r in requests]

    def close(self) -> None:
        self.proc = None
