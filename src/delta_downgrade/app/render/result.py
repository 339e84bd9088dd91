"""The ``RESULT {json}`` line every task and ``drop-feature`` prints, one per table."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from delta_downgrade.protocol import Protocol

RESULT_PREFIX = "RESULT "


def protocol_fields(protocol: Protocol) -> dict[str, Any]:
    """The protocol keys of a RESULT: versions and sorted feature lists (None when not listed)."""
    return {
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        "reader_features": sorted(protocol.reader_features) if protocol.reader_features is not None else None,
        "writer_features": sorted(protocol.writer_features) if protocol.writer_features is not None else None,
    }


def format_result(result: dict[str, Any]) -> str:
    return RESULT_PREFIX + json.dumps(result, sort_keys=True, default=str, separators=(",", ":"))


def emit_result(result: dict[str, Any], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    out.write(format_result(result) + "\n")
    out.flush()


def parse_result_lines(text: str) -> list[dict[str, Any]]:
    """Every RESULT line of a task's stdout (tests and the local job runner read them)."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines()
            if line.startswith(RESULT_PREFIX)]
