"""What the data rewrites cannot honour: writer requirements of table features (PROTOCOL.md,
"Writer Requirements for …") that a Spark file rewrite of this package would break, checked before
any file is written. Each refusal names the feature and what to do next.

Everything else a rewrite owes a writer-only feature is met by construction: the rewrites are
``remove`` + ``add`` with ``dataChange=false`` of the same rows (appendOnly, invariants,
checkConstraints, generatedColumns, identityColumns, allowColumnDefaults, changeDataFeed), keep the
field metadata they do not own (collations, identity, defaults), keep ``clusteringProvider`` and
write statistics for clustering columns (clustering, liquid). The one-line comments on the
registry entries in :mod:`delta_downgrade.protocol.features` say which is which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.protocol.protocol import Protocol

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.protocol.actions import AddFile
    from delta_downgrade.rewrite.file_plan import FilePlan
    from delta_downgrade.rewrite.physical_schema import Naming

__all__ = ["ensure_files_can_be_rewritten", "ensure_partition_columns_kept"]

#: PROTOCOL.md "Iceberg Compatibility V1/V2" (and the V3 RFC): while active, new data files must
#: materialize partition columns after the data columns and carry Parquet field ids for array
#: elements and map keys/values (``delta.columnMapping.nested.ids``), which the Spark rewrites do
#: not write.
ICEBERG_COMPAT = {"icebergCompatV1": "delta.enableIcebergCompatV1",
                  "icebergCompatV2": "delta.enableIcebergCompatV2",
                  "icebergCompatV3": "delta.enableIcebergCompatV3"}
VARIANT_FEATURES = ("variantType", "variantType-preview", "variantShredding", "variantShredding-preview")
MATERIALIZE_PARTITION_COLUMNS = "materializePartitionColumns"
NEXT_STEP = ("or drop the feature with Delta itself (--engine=delta-sql where delta-spark 4 runs, or "
             "ALTER TABLE … DROP FEATURE on Databricks)")


def _has_variant(t: Any) -> bool:
    if isinstance(t, str):
        return t == "variant"
    if not isinstance(t, dict):
        return False
    kind = t.get("type")
    if kind == "struct":
        return any(_has_variant(f.get("type")) for f in t.get("fields", []))
    if kind == "array":
        return _has_variant(t.get("elementType"))
    if kind == "map":
        return _has_variant(t.get("keyType")) or _has_variant(t.get("valueType"))
    return kind == "variant"


def _is_true(configuration: Mapping[str, str], key: str) -> bool:
    return str(configuration.get(key, "")).strip().lower() == "true"


def ensure_files_can_be_rewritten(protocol: Protocol, metadata: Metadata, *, purpose: str) -> None:
    """Refuse, before anything is written, a data rewrite (``purpose``, e.g. "purge deletion
    vectors") whose new files would break a writer requirement of the table's features:

    - an active icebergCompatV1/V2/V3 (its ``delta.enableIcebergCompatV*`` property true): the
      requirements hold while the feature is *active*, so disabling it is the way out;
    - a ``variant`` column anywhere in the schema (PROTOCOL.md "Variant Data Type": the Parquet
      struct of ``value``/``metadata``, possibly shredded, which the rewrites do not carry).
    """
    writer = protocol.features
    blocking: list[str] = []
    reasons: list[str] = []
    for feature, key in ICEBERG_COMPAT.items():
        if feature in writer and _is_true(metadata.configuration, key):
            blocking.append(feature)
            reasons.append(f"{feature} is active ({key}=true): new data files must materialize the "
                           f"partition columns and carry Parquet field ids for nested elements, which "
                           f"the Spark rewrite does not write; unset {key} first")
    if _has_variant(metadata.schema):
        listed = [f for f in VARIANT_FEATURES if f in protocol.features] or ["variantType"]
        blocking += listed
        reasons.append(f"the schema has a variant column ({', '.join(listed)}): the Spark rewrite "
                       f"cannot carry variant values (a Parquet struct of value/metadata, maybe "
                       f"shredded) into new files")
    if blocking:
        raise UnsupportedFeaturesError(
            f"cannot {purpose}: " + "; ".join(reasons) + f", {NEXT_STEP}. Nothing was written",
            features=blocking, for_write=True)


def ensure_partition_columns_kept(protocol: Protocol, metadata: Metadata,
                                  items: Iterable[tuple["AddFile", "FilePlan"]], naming: "Naming", *,
                                  purpose: str) -> None:
    """Refuse file rewrites that would write a data file without its partition columns while
    ``materializePartitionColumns`` is supported (Materialize Partition Columns RFC: "writers must
    materialize partition columns into any newly created data file"). A rewrite keeps the
    partition columns a file stores (``file_plan``); a file written before the feature was
    enabled stores none, and its rewrite would not either."""
    if MATERIALIZE_PARTITION_COLUMNS not in protocol.features or not metadata.partitionColumns:
        return
    partition = set(metadata.partitionColumns)
    wanted = {naming.out_name(f) for f in metadata.schema.get("fields", []) if f["name"] in partition}
    missing: list[str] = []
    for add, plan in items:
        written = {c.out_name for c in plan.columns}
        if not wanted <= written:
            missing.append(add.path)
    if missing:
        shown: Sequence[str] = missing[:5]
        more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
        raise UnsupportedFeaturesError(
            f"cannot {purpose}: {MATERIALIZE_PARTITION_COLUMNS} requires the partition columns in every "
            f"new data file, but {len(missing)} file(s) to rewrite do not store them "
            f"({', '.join(shown)}{more}), and the rewrite only keeps the columns a file has; "
            f"{NEXT_STEP}. Nothing was written",
            features=[MATERIALIZE_PARTITION_COLUMNS], for_write=True)
