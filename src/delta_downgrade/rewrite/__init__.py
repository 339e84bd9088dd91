"""Data-file rewrites on PySpark: deletion-vector purge, column-mapping removal, type widening.

Each rewrite is a hook of the native engine's DROP FEATURE: ``hook(run: DropRun) -> bool``
(whether it changed the table). They touch only the affected files, commit in batches so that a
crash never redoes committed work, and keep driver memory bounded by the number of affected files.
"""

from __future__ import annotations

from typing import Any, Callable


def hooks() -> dict[str, Callable[[Any], bool]]:
    """The rewrite hooks available in this installation (PySpark is imported only when one runs)."""
    found: dict[str, Callable[[Any], bool]] = {}
    try:
        import pyspark  # noqa: F401 - without Spark there is no rewrite; callers refuse up front
    except ImportError:
        return found
    try:
        from delta_downgrade.rewrite.dv_purge import check_deletion_vectors, purge_deletion_vectors
        found["purge_deletion_vectors"] = purge_deletion_vectors
        found["check_deletion_vectors"] = check_deletion_vectors
    except ImportError:
        pass
    try:
        from delta_downgrade.rewrite.column_mapping import remove_column_mapping
        found["remove_columnMapping"] = remove_column_mapping
    except ImportError:
        pass
    try:
        from delta_downgrade.rewrite.type_widening import rewrite_type_widening
        found["remove_typeWidening"] = rewrite_type_widening
        found["remove_typeWidening-preview"] = rewrite_type_widening
    except ImportError:
        pass
    return found
