"""Fresh row IDs and row commit versions, assigned when a commit is written (PROTOCOL.md "Row
Tracking", "Writer Requirements for Row Tracking"; delta-spark's ``RowId.assignFreshRowIds`` and
``DefaultRowCommitVersion.assignIfMissing``).

When the table, as the commit leaves it, supports ``rowTracking`` and ``delta.rowTrackingSuspended``
is not true, every ``add`` of the commit must carry a ``baseRowId`` and a
``defaultRowCommitVersion``:

- an ``add`` that carries them (a file recommitted under the same path) keeps them: "Writers must
  set the baseRowId field in recommitted ... add actions to the baseRowId value ... of the last
  committed add action with the same path" (the same for ``defaultRowCommitVersion``);
- any other ``add`` gets ``baseRowId`` = the high-water mark + 1 and moves the mark by its
  ``numRecords`` (its rows get the fresh IDs ``baseRowId .. baseRowId + numRecords - 1``: the
  fresh ID of a row is ``baseRowId`` + its physical index in the file), and
  ``defaultRowCommitVersion`` = the version being written;
- the commit carries the new mark in the ``delta.rowTracking`` domain
  (``{"rowIdHighWaterMark": N}``, other keys of the current configuration kept) whenever it moved.

The assignment is redone on every attempt of a commit (:func:`delta_downgrade.log.commit.commit`):
a lost race retries at a new version, above the mark the winners may have raised. When suspended
nothing is assigned ("writers should not assign the baseRowId or the defaultRowCommitVersion").
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from msgspec import Struct
from msgspec.structs import replace
from delta_downgrade.errors import CorruptLogError, RowIdAssignmentWithoutStatsError
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import AddFile, AnyAction, DomainMetadata, Metadata, ProtocolAction
from delta_downgrade.protocol.table_config import TableConfig

ROW_TRACKING_FEATURE = "rowTracking"
ROW_TRACKING_DOMAIN = "delta.rowTracking"
HIGH_WATER_MARK_KEY = "rowIdHighWaterMark"
# PROTOCOL.md "Writer Requirements for Row Tracking": the commitInfo tag that says whether every
# stable row ID and row commit version of the rows a commit copies was preserved.
PRESERVED_TAG = "delta.rowTracking.preserved"
# No row ID was ever assigned: the first fresh row ID is 0 (delta-spark's MISSING_HIGH_WATER_MARK).
MISSING_HIGH_WATER_MARK = -1


class RowTracking(Struct, frozen=True):
    """What PROTOCOL.md "Row Tracking" makes of a protocol and a configuration."""

    supported: bool        # ``rowTracking`` among the writer features
    enabled: bool          # supported and ``delta.enableRowTracking`` true
    suspended: bool        # ``delta.rowTrackingSuspended`` true
    row_id_column: str | None = None               # the materialised row ID column, when enabled
    row_commit_version_column: str | None = None   # the materialised row commit version column

    @classmethod
    def of(cls, protocol: Protocol | None, configuration: dict[str, str] | None) -> "RowTracking":
        supported = protocol is not None and ROW_TRACKING_FEATURE in protocol.features
        if not supported:
            return cls(False, False, False)
        config = TableConfig(configuration or {})
        suspended = config.row_tracking_suspended  # refuses enabled + suspended together
        enabled = config.row_tracking_enabled
        if not enabled:
            return cls(True, False, suspended)
        return cls(True, True, suspended, config.materialized_row_id_column,
                   config.materialized_row_commit_version_column)

    @property
    def assigns(self) -> bool:
        """Writers must assign fresh row IDs and row commit versions to what they add."""
        return self.supported and not self.suspended

    @property
    def preserves(self) -> bool:
        """Writers must preserve stable row IDs and row commit versions of copied rows, in the
        materialised columns (PROTOCOL.md: "When Row Tracking is enabled ... writers are expected
        to preserve Row IDs and Commit Versions"); both column names are then known."""
        return self.enabled and bool(self.row_id_column) and bool(self.row_commit_version_column)


def row_tracking_of(protocol: Protocol | None, metadata: Metadata | None,
                    pending: Sequence[AnyAction] = ()) -> RowTracking:
    """Row tracking of the table once ``pending`` (which may hold a new protocol or metadata) is
    committed on top of ``protocol`` and ``metadata``."""
    for action in pending:
        if isinstance(action, ProtocolAction):
            protocol = action.protocol
        elif isinstance(action, Metadata):
            metadata = action
    return RowTracking.of(protocol, metadata.configuration if metadata is not None else None)


def needs_fresh_row_ids(actions: Sequence[AnyAction]) -> bool:
    """Whether some ``add`` of ``actions`` lacks a ``baseRowId`` or a ``defaultRowCommitVersion``."""
    return any(isinstance(a, AddFile) and (a.baseRowId is None or a.defaultRowCommitVersion is None)
               for a in actions)


def _configuration(domain: DomainMetadata) -> dict[str, Any]:
    try:
        config = json.loads(domain.configuration or "{}")
    except ValueError:
        config = None
    mark = config.get(HIGH_WATER_MARK_KEY) if isinstance(config, dict) else None
    if not isinstance(config, dict) or (mark is not None and (type(mark) is not int or mark < -1)):
        raise CorruptLogError(
            f"the {ROW_TRACKING_DOMAIN} domain's configuration {domain.configuration!r} is not a JSON "
            f"object with an integer {HIGH_WATER_MARK_KEY} (PROTOCOL.md \"Row Tracking\"), so no "
            f"fresh row ID can be assigned safely; nothing was written. Repair the domain with the "
            f"writer that owns the table")
    return config


def high_water_mark(domain: DomainMetadata | None) -> int:
    """The ``rowIdHighWaterMark`` of a live ``delta.rowTracking`` domain, or
    :data:`MISSING_HIGH_WATER_MARK` without one."""
    if domain is None or domain.removed:
        return MISSING_HIGH_WATER_MARK
    mark = _configuration(domain).get(HIGH_WATER_MARK_KEY)
    return MISSING_HIGH_WATER_MARK if mark is None else int(mark)


def high_water_mark_action(mark: int, current: DomainMetadata | None = None) -> DomainMetadata:
    """The ``delta.rowTracking`` domain with ``rowIdHighWaterMark`` = ``mark``; the other keys of
    ``current``'s configuration (delta-spark writes ``domainName``) are kept."""
    config: dict[str, Any] = {}
    if current is not None and not current.removed:
        config = dict(_configuration(current))
    config[HIGH_WATER_MARK_KEY] = mark
    # rowIdHighWaterMark first, as delta-spark writes it
    ordered = {HIGH_WATER_MARK_KEY: mark, **{k: v for k, v in config.items() if k != HIGH_WATER_MARK_KEY}}
    return DomainMetadata(domain=ROW_TRACKING_DOMAIN, configuration=json.dumps(ordered, separators=(",", ":")))


def assign_fresh_row_ids(actions: Sequence[AnyAction], *, version: int,
                         domain: DomainMetadata | None) -> list[AnyAction]:
    """``actions`` with a fresh ``baseRowId`` and ``defaultRowCommitVersion`` = ``version`` on
    every ``add`` that lacks them, and, when fresh IDs were taken, the ``delta.rowTracking``
    domain with the new high-water mark (module doc). ``domain``: the table's current
    ``delta.rowTracking`` domain (None without one). A ``delta.rowTracking`` domain among
    ``actions`` is folded in: the mark starts above the higher of the two.

    Raises :class:`RowIdAssignmentWithoutStatsError` for an ``add`` that needs IDs and has no
    ``numRecords`` (nothing is written: the caller raises before the commit file)."""
    mark = high_water_mark(domain)
    base_domain = domain
    own = [a for a in actions if isinstance(a, DomainMetadata) and a.domain == ROW_TRACKING_DOMAIN]
    for domain in own:
        if domain.removed:
            # Removing the domain while adding rows to a table that tracks them contradicts
            # itself (the drop of rowTracking removes the domain with the feature, never before).
            raise ValueError(f"a commit that removes the {ROW_TRACKING_DOMAIN} domain cannot add "
                             f"rows that need fresh row IDs")
        if high_water_mark(domain) >= mark:
            mark, base_domain = high_water_mark(domain), domain
    start = mark
    out: list[AnyAction] = []
    for action in actions:
        if isinstance(action, AddFile) and (action.baseRowId is None or action.defaultRowCommitVersion is None):
            base = action.baseRowId
            if base is None:
                rows = action.num_records
                if rows is None:
                    raise RowIdAssignmentWithoutStatsError(
                        f"cannot assign fresh row IDs to {action.path}: its add has no numRecords "
                        f"statistic and the table supports rowTracking (PROTOCOL.md \"Writer "
                        f"Requirements for Row Tracking\"); this commit was not written. Collect "
                        f"statistics for the table (ANALYZE TABLE … COMPUTE DELTA STATISTICS), "
                        f"then rerun", params={"path": action.path})
                base = mark + 1
                mark += rows
            commit_version = action.defaultRowCommitVersion
            action = replace(action, baseRowId=base,
                             defaultRowCommitVersion=version if commit_version is None else commit_version)
        out.append(action)
    if mark == start:
        return out
    # One domainMetadata per domain in a commit (delta-spark refuses two:
    # DELTA_DUPLICATE_DOMAIN_METADATA_INTERNAL_ERROR): the new mark replaces any the caller gave.
    return [a for a in out if not (isinstance(a, DomainMetadata) and a.domain == ROW_TRACKING_DOMAIN)] \
        + [high_water_mark_action(mark, base_domain)]


__all__ = [
    "HIGH_WATER_MARK_KEY", "MISSING_HIGH_WATER_MARK", "PRESERVED_TAG", "ROW_TRACKING_DOMAIN",
    "ROW_TRACKING_FEATURE", "RowTracking", "assign_fresh_row_ids", "high_water_mark",
    "high_water_mark_action", "needs_fresh_row_ids", "row_tracking_of",
]
