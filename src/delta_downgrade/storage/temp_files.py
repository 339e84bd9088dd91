"""The names of this package's temporary files, shared by every storage implementation."""

from __future__ import annotations

import os
import re

#: Temporary files of this package: ``.<final name>.<pid>.<12 hex digits>.tmp`` next to the final
#: name. Every writer (local and Hadoop) uses :func:`temp_name`, so that ``cleanup`` can recognise
#: stale ones of its own and nothing else (delta-spark's are ``.<name>.<uuid>.tmp``, with dashes).
TEMP_NAME_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<rand>[0-9a-f]{12})\.tmp$")


def temp_name(final_name: str) -> str:
    """The name of a temporary file for ``final_name`` (hidden: starts with ``.``)."""
    return f".{final_name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"


def is_package_temp(rel_path: str) -> bool:
    """Whether the last component of ``rel_path`` has this package's temporary-file name."""
    return TEMP_NAME_RE.match(rel_path.rsplit("/", 1)[-1]) is not None
