"""Stable row IDs and row commit versions carried into rewritten files (PROTOCOL.md "Row
Tracking").

A rewrite copies rows into new files under new paths. The new ``add`` gets fresh row IDs and a
fresh row commit version at commit time (:mod:`delta_downgrade.log.row_ids`), so a row's *stable*
values survive only if the new file materialises them: when row tracking is enabled, "writers
are expected to preserve Row IDs and Commit Versions" in the hidden columns named by
``delta.rowTracking.materializedRowIdColumnName`` and ``...RowCommitVersionColumnName``.

The stable values of a row of the old file are those of PROTOCOL.md "Reader Requirements for Row
Tracking":

- row ID: the materialised row ID when the column is present and not null, else the old file's
  ``baseRowId`` + the row's physical index in the old file;
- row commit version: the materialised value when present and not null, else the old file's
  ``defaultRowCommitVersion``.

The rewrites write exactly these into the new file's two columns, for every row they keep (a file
without the columns reads them as null). Without row tracking enabled there is nothing stable to
preserve: the columns of the old file, if any, are not recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from msgspec import Struct

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

    from delta_downgrade.log.row_ids import RowTracking
    from delta_downgrade.protocol.actions import AddFile

ROW_ID = "row_id"
ROW_COMMIT_VERSION = "row_commit_version"


class MaterializedColumns(Struct, frozen=True):
    """The names of the two hidden columns a rewrite fills with stable values."""

    row_id: str
    row_commit_version: str

    @classmethod
    def of(cls, tracking: "RowTracking") -> "MaterializedColumns | None":
        """The columns to preserve into, or None when row tracking is not enabled (or the names
        are missing, which an enabled table must not do: then nothing can be preserved)."""
        if not tracking.preserves:
            return None
        assert tracking.row_id_column and tracking.row_commit_version_column
        return cls(tracking.row_id_column, tracking.row_commit_version_column)

    @property
    def names(self) -> tuple[str, str]:
        return self.row_id, self.row_commit_version

    def kind(self, name: str) -> str | None:
        """:data:`ROW_ID`, :data:`ROW_COMMIT_VERSION` or None for another column name."""
        return {self.row_id: ROW_ID, self.row_commit_version: ROW_COMMIT_VERSION}.get(name)


def has_stable_values(add: "AddFile") -> bool:
    """Whether every row of ``add`` has a stable row ID and row commit version even where its
    materialised columns are null (its ``baseRowId`` and ``defaultRowCommitVersion`` are set, as
    PROTOCOL.md requires of every file once row tracking is enabled)."""
    return add.baseRowId is not None and add.defaultRowCommitVersion is not None


def _long(value: Any) -> "Column":
    from pyspark.sql import functions as F

    return F.lit(value).cast("long")


def stable_row_id(materialized: "Column | None", base_row_id: "Column", row_index: "Column") -> "Column":
    """``coalesce(materialized, base_row_id + row_index)`` as a long (null base: no default)."""
    from pyspark.sql import functions as F

    default = base_row_id.cast("long") + row_index.cast("long")
    if materialized is None:
        return default
    return F.coalesce(materialized.cast("long"), default)


def stable_row_commit_version(materialized: "Column | None", default_version: "Column") -> "Column":
    """``coalesce(materialized, default_version)`` as a long."""
    from pyspark.sql import functions as F

    if materialized is None:
        return default_version.cast("long")
    return F.coalesce(materialized.cast("long"), default_version.cast("long"))


def per_file_value(values: Mapping[Any, int | None], key: "Column") -> "Column":
    """The value of the file a row comes from: a literal map from each file's key (its join
    residue or name, rewrite/dv_purge_join.JoinKey) looked up with the row's ``key``; a file
    without a value gives null, and so does a key the map lacks (``try_element_at``: under ANSI
    mode ``element_at`` may fail instead, and a size-keyed attempt whose log sizes are wrong
    must reach its row-count check, which retries by file name)."""
    from pyspark.sql import functions as F

    if not values:
        return _long(None)
    pairs = []
    for k, v in values.items():
        pairs += [_long(k) if isinstance(k, int) else F.lit(k), _long(v)]
    return F.try_element_at(F.create_map(*pairs), key.cast("long") if isinstance(next(iter(values)), int) else key)


def constant(value: int | None) -> "Column":
    """A per-file constant (one input file per job: the file rewriter)."""
    return _long(value)
