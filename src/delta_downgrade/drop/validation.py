"""DROP FEATURE validation, in delta-spark's order (``AlterTableDropFeatureDeltaCommand``), and
the plan's checks (:func:`validate_plan`). Pure: nothing is read or written here, so a
validation error can never leave anything behind."""

from __future__ import annotations

from typing import Mapping, NamedTuple

from delta_downgrade.errors import (
    CheckpointProtectionNeedsTruncationError, CorruptLogError, DependentFeatureError, FeatureDropError,
    FeatureIsDeltaPropertyError, FeatureNotPresentDidYouMeanError, FeatureNotPresentError,
    HistoryTruncationNotAllowedError,
    InvalidProtocolDowngradeError, NonRemovableFeatureError, UnsupportedClientFeatureError,
)
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol, TableFeature, lookup_feature
from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.protocol.features import get_feature, is_delta_table_property
from delta_downgrade.protocol.schema_shape import check_schema_shape
from delta_downgrade.protocol.table_config import TableConfig

NEXT_STEP_NOT_PRESENT = "Nothing to do: the table does not use it (run `delta-downgrade inspect` to see its features)."


def clean_feature_name(raw: str) -> str:
    """The name may be bare, single-quoted or back-quoted (Spark SQL's ``DROP FEATURE`` syntax)."""
    name = raw.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'`\"":
        name = name[1:-1].strip()
    return name


def _preview_counterpart(name: str) -> str | None:
    """``typeWidening`` for ``typeWidening-preview`` and back, when the registry has both: a
    preview feature and its released one are different features of one capability. Only a
    counterpart that can be dropped is suggested (``inCommitTimestamp-preview`` cannot)."""
    other = name[:-len("-preview")] if name.endswith("-preview") else f"{name}-preview"
    found = get_feature(other)
    return other if found is not None and found.removable and found.known_to_delta_spark else None


def _error(kind: type[FeatureDropError], message: str, feature: str, **params: object) -> FeatureDropError:
    return kind(message, feature=feature, params={"feature": feature, **params})


def validate_drop(protocol: Protocol, raw_name: str, *, truncate_history: bool) -> TableFeature:
    """Return the feature to drop, or raise the first validation error that applies, in
    delta-spark's order."""
    name = clean_feature_name(raw_name)
    # 1. The name is resolved case-insensitively (delta-spark's featureNameToFeature), and a
    # present feature is found under that resolution too: `v2checkpoint` drops v2Checkpoint.
    # (delta-spark's own presence check compares the typed string and so refuses it; answering
    # "already absent" to a feature the table still has would be worse than either.)
    spec = get_feature(name) or lookup_feature(name)
    if spec is not None and name not in protocol.features and spec.name in protocol.features:
        name = spec.name
    present = name in protocol.features
    # 2. A `delta.*` table property given instead of a feature name.
    if not present and name.lower().startswith("delta.") and is_delta_table_property(name):
        raise _error(FeatureIsDeltaPropertyError,
                     f"'{name}' is a Delta table property, not a table feature. Give the feature's "
                     f"name instead (for example deletionVectors for delta.enableDeletionVectors)",
                     name)
    # 2b. A name real tables carry that delta-spark does not know: Delta answers it as any
    # unknown feature (its featureNameToFeature finds nothing), and so do we, saying what it is.
    if spec is not None and not spec.known_to_delta_spark:
        raise _error(UnsupportedClientFeatureError,
                     f"cannot drop {spec.name}: Delta's DROP FEATURE does not support this feature "
                     f"(a Databricks feature delta-spark does not implement); clients that must "
                     f"read or write this table need to support {spec.name}", spec.name)
    # 3. Known, but not in the protocol: "already done" - unless its preview (or released)
    # counterpart is there, which is what the user meant to drop.
    if spec is not None and not present:
        counterpart = _preview_counterpart(spec.name)
        if counterpart is not None and counterpart in protocol.features:
            raise _error(FeatureNotPresentDidYouMeanError,
                         f"cannot drop {name}: it is not present in the table's protocol {protocol}, "
                         f"but {counterpart} is. Did you mean {counterpart}? Drop that name",
                         name, didYouMean=counterpart)
        raise _error(FeatureNotPresentError,
                     f"cannot drop {name}: it is not present in the table's protocol {protocol}. "
                     + NEXT_STEP_NOT_PRESENT, name)
    # 4. Present but not removable.
    if spec is not None and not spec.removable:
        raise _error(NonRemovableFeatureError,
                     f"cannot drop {name}: dropping this feature is not supported by Delta. Clients "
                     f"that must read this table need to support {name}", name)
    # 5. Unknown to this package (present or not).
    if spec is None:
        raise _error(UnsupportedClientFeatureError,
                     f"cannot drop {name}: delta-downgrade does not know this feature, so it cannot "
                     f"tell how to remove its traces. Check the spelling (`delta-downgrade inspect` "
                     f"lists the table's features)", name)
    # 6. TRUNCATE HISTORY for a feature that needs no history protection.
    if truncate_history and not spec.requires_history_protection and spec.name != CHECKPOINT_PROTECTION:
        raise _error(HistoryTruncationNotAllowedError,
                     f"{name} does not require history truncation: drop it without "
                     f"--truncate-history", name)
    # 7. checkpointProtection only goes with TRUNCATE HISTORY.
    if spec.name == CHECKPOINT_PROTECTION and not truncate_history:
        raise _error(CheckpointProtectionNeedsTruncationError,
                     "checkpointProtection can only be dropped by truncating the history before its "
                     "boundary: use truncate_task (or drop-feature --truncate-history)", name)
    # 8. Another present feature requires it.
    dependents = sorted(protocol.dependents_of(spec.name))
    if dependents:
        # A dependent that cannot be dropped (clustering, liquid, collations need domainMetadata)
        # keeps the feature for good: say so rather than "drop those first".
        fixed = [d for d in dependents if not ((f := get_feature(d)) is not None and f.removable)]
        next_step = (f"{', '.join(fixed)} cannot be dropped, so {name} stays" if fixed
                     else "drop those first")
        raise _error(DependentFeatureError,
                     f"cannot drop {name} because other features in this table depend on it "
                     f"({', '.join(dependents)}); {next_step}", name,
                     dependentFeatures=", ".join(dependents))
    return spec


class ValidatedPlan(NamedTuple):
    """What a validated drop ends with: its protocol, and the metadata after the pre-downgrade's
    property updates (the one its commits carry forward)."""

    protocol: Protocol
    metadata: Metadata


def validate_plan(snapshot: Snapshot, spec: TableFeature, *, planned_updates: Mapping[str, str | None],
                  truncate_history: bool) -> ValidatedPlan:
    """Everything a drop will need later, checked before its first write; returns the protocol
    the drop ends with and the metadata after ``planned_updates``. A check that could fail
    half-way belongs here, so that a plan that cannot finish is refused with nothing written —
    and ``--dry-run`` runs the very same checks.

    - every table property the drop reads (retentions, checkpoint policy and interval, in-commit
      timestamps), now and after the pre-downgrade's ``planned_updates``;
    - the checkpoints the plan writes (the barriers and the one at the boundary of the
      Checkpoint Protection RFC; the TRUNCATE HISTORY path's checkpoint): rule (b), the
      checkpoint gate, and a checkpoint policy that says which kind (classic, or V2 under
      ``delta.checkpointPolicy=v2``: PROTOCOL.md "V2 Checkpoint Table Feature");
    - the protocol transition of the downgrade commit (PROTOCOL.md "Table Features": the
      feature's removal with normalisation, plus ``checkpointProtection`` for the fast path).
    """
    from delta_downgrade.log.checkpoint.on_driver import check_checkpoint_writable

    protocol = snapshot.protocol
    # The drop writes this metadata forward (a rewrite reads every file with it): it must be one
    # every reader can take, or the run would fail after its first write.
    try:
        check_schema_shape(snapshot.metadata.schema, snapshot.metadata.partitionColumns)
    except CorruptLogError as exc:
        raise exc.amended(f"{exc.message}. The table's metadata is damaged; nothing was written. Repair "
                          f"its schemaString / partitionColumns (a writer that reads it, or a restore of the "
                          f"commit that set it) and run the drop again") from exc
    TableConfig(snapshot.metadata.configuration).validate()
    planned = snapshot.metadata.with_configuration(dict(planned_updates)) if planned_updates else snapshot.metadata
    TableConfig(planned.configuration).validate()
    if "rowTracking" in protocol.features:  # PROTOCOL.md "Row Tracking": every commit assigns IDs
        TableConfig(snapshot.metadata.configuration).validate_row_tracking()

    if spec.name == CHECKPOINT_PROTECTION:
        # Checkpoint Protection RFC: its checkpoint (only when none exists at or after the
        # boundary) is checked where truncate decides to write it.
        after = protocol.without_feature(spec.name)
    elif truncate_history:
        after = protocol.without_feature(spec.name)
    else:
        after = protocol.downgrade_for_drop(spec.name, checkpoint_protection=spec.requires_history_protection)
    if spec.requires_history_protection and spec.name != CHECKPOINT_PROTECTION:
        # New checkpoints are at the latest version, never below the boundary (rule (b) holds).
        check_checkpoint_writable(snapshot.version + 1, protocol, planned, None)
        check_checkpoint_writable(snapshot.version + 1, after, planned, None)
    if not protocol.can_downgrade_to(after, spec.name):
        raise InvalidProtocolDowngradeError(
            f"refusing the protocol transition {protocol} -> {after} for dropping {spec.name}; "
            f"nothing was written", feature=spec.name)
    return ValidatedPlan(after, planned)
