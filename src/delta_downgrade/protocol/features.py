"""Table features: what each one is, what it needs, and whether this package can handle it.

The registry mirrors delta-spark's feature catalogue (``TableFeature.scala``, cited as [DS]
below with its DROP FEATURE validation), which follows PROTOCOL.md's "Valid Feature Names" appendix;
[TF] is PROTOCOL.md "Table Features", [PE] its "Protocol Evolution", [CP] the Checkpoint Protection
RFC. It is data, not logic:
the protocol algebra in :mod:`delta_downgrade.protocol.protocol` reads it.

Tests reproduce Spark's suites with test-only features (``testRemovableWriter`` …) that must never
reach the production registry. :func:`with_registry` swaps the *active* registry for a block, and
everything that resolves a feature name (:func:`lookup_feature`, :func:`get_feature`, the protocol
algebra) consults :func:`active_registry`, so code under test sees the test features without an
extra parameter threaded through every call. Code outside tests should therefore look features up
through these functions rather than indexing :data:`FEATURES` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, TypedDict

from msgspec import Struct, field
from msgspec.structs import force_setattr

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; annotations only (postponed)

__all__ = [
    "CHECKPOINT_PROTECTION",
    "DELTA_TABLE_PROPERTIES",
    "FEATURES",
    "FeatureKind",
    "TableFeature",
    "active_registry",
    "get_feature",
    "is_delta_table_property",
    "lookup_feature",
    "registry_with",
    "with_registry",
]

CHECKPOINT_PROTECTION = "checkpointProtection"

# Legacy protocol versions: below these, features are implied by the versions ([PE]).
TABLE_FEATURES_READER_VERSION = 3
TABLE_FEATURES_WRITER_VERSION = 7


class FeatureKind(str, Enum):
    """Writer-only features are listed in ``writerFeatures`` only; reader-writer ones in both
    lists (PROTOCOL.md "Table Features")."""

    WRITER = "writer"
    READER_WRITER = "readerWriter"


class TableFeature(Struct, frozen=True):
    """One table feature ([DS]).

    ``min_reader_version`` is 1 for writer-only features; Spark says 0, and [DS]'s minimum versions
    clamp to 1 anyway, so 0 is accepted and means the same. ``requires_history_protection`` is
    Spark's ``requiresHistoryProtection``: meaningful for removable features; for the others it
    holds Spark's default ([DS]), true for reader-writer and false for writer features.
    ``properties`` are the ``delta.*`` table properties that enable or trace the feature; an entry
    ending in ``.*`` stands for every key with that prefix (see :meth:`traces_property`).
    """

    name: str
    kind: FeatureKind
    min_reader_version: int
    min_writer_version: int
    is_legacy: bool = False
    removable: bool = False
    requires_history_protection: bool = False
    required_features: frozenset[str] = field(default_factory=frozenset)
    package_reads: bool = True
    package_writes: bool = True
    properties: tuple[str, ...] = ()
    in_spec: bool = False
    #: False for names real (Databricks) tables carry that delta-spark's registry does not know:
    #: its DROP FEATURE answers them as unknown features (DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE).
    known_to_delta_spark: bool = True

    def __post_init__(self) -> None:
        # Accept any iterable for convenience but store the immutable shape the type promises.
        force_setattr(self, "required_features", frozenset(self.required_features))
        force_setattr(self, "properties", tuple(self.properties))
        force_setattr(self, "kind", FeatureKind(self.kind))
        problems = _feature_problems(self)
        if problems:
            raise ValueError(f"invalid table feature {self.name!r}: " + "; ".join(problems))

    @property
    def is_reader_writer(self) -> bool:
        return self.kind is FeatureKind.READER_WRITER

    @property
    def is_writer_only(self) -> bool:
        return self.kind is FeatureKind.WRITER

    def traces_property(self, key: str) -> bool:
        """Whether table property ``key`` enables or traces this feature (exact, or ``prefix.*``)."""
        for prop in self.properties:
            if prop.endswith(".*"):
                if key.startswith(prop[:-1]) and len(key) > len(prop) - 1:
                    return True
            elif key == prop:
                return True
        return False


def _feature_problems(f: TableFeature) -> list[str]:
    """Consistency of a feature definition with the version rules of [TF] and [PE]."""
    out: list[str] = []
    if not f.name or f.name != f.name.strip():
        out.append("the name must be non-empty and carry no surrounding blanks")
    if f.is_writer_only and f.min_reader_version not in (0, 1):
        out.append("a writer-only feature has min reader version 0 or 1")
    if f.is_reader_writer and f.min_reader_version < 2:
        out.append("a reader-writer feature needs min reader version >= 2")
    if f.is_legacy:
        if not 2 <= f.min_writer_version < TABLE_FEATURES_WRITER_VERSION:
            out.append("a legacy feature has min writer version 2..6")
        if f.min_reader_version >= TABLE_FEATURES_READER_VERSION:
            out.append("a legacy feature has min reader version <= 2")
    else:
        # Non-legacy features exist only in table-features protocols ([TF]).
        if f.min_writer_version != TABLE_FEATURES_WRITER_VERSION:
            out.append("a table feature has min writer version 7")
        if f.is_reader_writer and f.min_reader_version != TABLE_FEATURES_READER_VERSION:
            out.append("a reader-writer table feature has min reader version 3")
    if f.name in f.required_features:
        out.append("a feature cannot require itself")
    return out


class _Flags(TypedDict, total=False):
    """TableFeature's boolean keyword fields, as the catalogue below passes them."""

    removable: bool
    requires_history_protection: bool
    package_reads: bool
    package_writes: bool
    in_spec: bool
    known_to_delta_spark: bool


def _feature(name: str, kind: FeatureKind, reader: int, writer: int, *, required_features: Iterable[str],
             properties: Iterable[str], flags: _Flags) -> TableFeature:
    """A feature of the catalogue below: legacy iff its writer version is below 7; the required
    features and properties stored in the immutable shapes TableFeature declares."""
    return TableFeature(name, kind, reader, writer, is_legacy=writer < TABLE_FEATURES_WRITER_VERSION,
                        required_features=frozenset(required_features), properties=tuple(properties), **flags)


def _w(name: str, writer: int = TABLE_FEATURES_WRITER_VERSION, *, required_features: Iterable[str] = (),
       properties: Iterable[str] = (), **flags: Unpack[_Flags]) -> TableFeature:
    """A writer-only feature; legacy iff its writer version is below 7."""
    return _feature(name, FeatureKind.WRITER, 1, writer, required_features=required_features,
                    properties=properties, flags=flags)


def _rw(name: str, reader: int = TABLE_FEATURES_READER_VERSION, writer: int = TABLE_FEATURES_WRITER_VERSION, *,
        required_features: Iterable[str] = (), properties: Iterable[str] = (),
        **flags: Unpack[_Flags]) -> TableFeature:
    """A reader-writer feature; legacy iff its writer version is below 7. Spark's default
    ``requiresHistoryProtection`` for reader-writer features is true ([DS])."""
    flags.setdefault("requires_history_protection", True)
    return _feature(name, FeatureKind.READER_WRITER, reader, writer, required_features=required_features,
                    properties=properties, flags=flags)


# Features whose commits may live outside ``_delta_log`` or whose log is governed by a catalog or a
# redirect: this package can neither read nor write such tables' logs faithfully.
class _Unsupported(TypedDict):
    package_reads: bool
    package_writes: bool


_UNSUPPORTED: _Unsupported = {"package_reads": False, "package_writes": False}

_TYPE_WIDENING_PROPS = ("delta.enableTypeWidening",)
_ICT_PROPS = ("delta.enableInCommitTimestamps", "delta.inCommitTimestampEnablementVersion",
              "delta.inCommitTimestampEnablementTimestamp")
_ROW_TRACKING_PROPS = ("delta.enableRowTracking", "delta.rowTrackingSuspended",
                       "delta.rowTracking.materializedRowIdColumnName",
                       "delta.rowTracking.materializedRowCommitVersionColumnName")
_COORDINATED_COMMITS_PROPS = ("delta.coordinatedCommits.commitCoordinator-preview",
                              "delta.coordinatedCommits.commitCoordinatorConf-preview",
                              "delta.coordinatedCommits.tableConf-preview")

# [DS], feature by feature. The one-line comment on each writable feature says how this package
# meets PROTOCOL.md's writer requirements in what it writes: protocol/metadata/domain commits,
# checkpoints, and the data rewrites of the DV purge, column-mapping removal and type widening
# (``remove`` + ``add`` with dataChange=false, same rows) — or which rewrite refuses, naming the
# feature (``rewrite/writer_requirements.py``).
_CATALOG: tuple[TableFeature, ...] = (
    # Rewrites are dataChange=false rearrangements, which append-only tables allow.
    _w("appendOnly", 2, properties=("delta.appendOnly",), in_spec=True),
    # invariants, generated and identity columns live in column metadata, not table properties.
    # Invariants: no rewrite adds a row; the rows written are the rows the table already had.
    _w("invariants", 2, in_spec=True),
    # CHECK constraints bind new rows; a rewrite writes none (same rows, same values).
    _w("checkConstraints", 3, removable=True, properties=("delta.constraints.*",), in_spec=True),
    # dataChange=false rewrites need no CDC files (PROTOCOL.md "Add CDC File").
    _w("changeDataFeed", 4, properties=("delta.enableChangeDataFeed",), in_spec=True),
    # Same rows, values cast only to the wider table type: generated values still match.
    _w("generatedColumns", 4, in_spec=True),
    _rw("columnMapping", 2, 5, removable=True,
        properties=("delta.columnMapping.mode", "delta.columnMapping.maxColumnId"), in_spec=True),
    # No row is inserted, so no identity value is generated; delta.identity.* metadata is kept.
    _w("identityColumns", 6, in_spec=True),
    # Defaults apply to inserted rows only, and a rewrite inserts none; CURRENT_DEFAULT is kept.
    _w("allowColumnDefaults", in_spec=True),
    _rw("deletionVectors", removable=True, properties=("delta.enableDeletionVectors",),
        in_spec=True),
    # rowTracking overrides the writer default explicitly ([DS]): false.
    _w("rowTracking", removable=True, required_features={"domainMetadata"},
       properties=_ROW_TRACKING_PROPS, in_spec=True),
    # Live domains are carried by every checkpoint and never touched by a rewrite.
    _w("domainMetadata", removable=True, in_spec=True),
    # Rewrites write timestamp_ntz as Parquet INT64 microseconds without UTC adjustment.
    _rw("timestampNtz", in_spec=True),
    _rw("v2Checkpoint", removable=True, properties=("delta.checkpointPolicy",), in_spec=True),
    # While active (delta.enableIcebergCompatV1/V2/V3=true) a rewrite would have to place
    # materialized partition columns and nested Parquet field ids the way they ask: file rewrites
    # refuse; protocol-only drops are fine (no new AddFile).
    _w("icebergCompatV1", required_features={"columnMapping"},
       properties=("delta.enableIcebergCompatV1",), in_spec=True),
    _w("icebergCompatV2", required_features={"columnMapping"},
       properties=("delta.enableIcebergCompatV2",), in_spec=True),
    _w("icebergCompatV3", required_features={"columnMapping", "rowTracking"},
       properties=("delta.enableIcebergCompatV3",)),
    # PROTOCOL.md "Clustered Table": the delta.clustering domain is kept (and renamed by
    # column-mapping removal), rewritten files keep clusteringProvider and always get statistics
    # for the clustering columns (protocol/clustering.py, rewrite/stats.py).
    _w("clustering", required_features={"domainMetadata"}, in_spec=True),
    # Databricks' preview name of clustering (DBR 13.x; not in delta-spark): the same writer
    # requirements, its columns in the delta.liquid domain as [{"physicalName": [...]}].
    # Not removable, like clustering.
    _w("liquid", required_features={"domainMetadata"}, known_to_delta_spark=False),
    # Collated String Type RFC: __COLLATIONS field metadata is kept by every schema change
    # (column-mapping removal and type widening strip only their own keys), statistics written
    # are UTF-8 binary ones (allowed), statsWithCollation is re-keyed with the other stats.
    _w("collations", required_features={"domainMetadata"}, known_to_delta_spark=False),
    # Names Databricks tables carry that delta-spark 4.4 does not know (known by name here so that
    # inspect, compat and a drop say what they are; none is removable, as for delta-spark).
    # The Collated String Type RFC's preview name, as collations.
    _w("collations-preview", required_features={"domainMetadata"}, known_to_delta_spark=False),
    # In-commit timestamps under their preview name: this package's commits write the
    # inCommitTimestamp only for the released name, so it does not write such a table.
    _w("inCommitTimestamp-preview", package_writes=False, known_to_delta_spark=False),
    # The catalog-managed preview name (Catalog-Managed Tables RFC): commits go through the catalog.
    _rw("catalogOwned-preview", required_features={"inCommitTimestamp"}, known_to_delta_spark=False,
        **_UNSUPPORTED),
    # Iceberg writer compatibility (managed Iceberg tables): writes must keep Iceberg's
    # requirements (field ids, no unsupported types), which this package does not check.
    _w("icebergWriterCompatV1", required_features={"icebergCompatV2"}, package_writes=False,
       known_to_delta_spark=False),
    _w("icebergWriterCompatV3", required_features={"icebergCompatV3"}, package_writes=False,
       known_to_delta_spark=False),
    # Nanosecond timestamps: a file rewrite cannot carry the type; the log reads as any other.
    _rw("timestampNanos", package_writes=False, known_to_delta_spark=False),
    _rw("vacuumProtocolCheck", removable=True, in_spec=True),
    _w("inCommitTimestamp", removable=True, properties=_ICT_PROPS, in_spec=True),
    _rw("typeWidening", removable=True, properties=_TYPE_WIDENING_PROPS),
    _rw("typeWidening-preview", removable=True, properties=_TYPE_WIDENING_PROPS),
    # File rewrites cannot carry variant columns (Parquet struct of value/metadata, maybe
    # shredded): a rewrite of a table whose schema has one refuses; protocol-only drops are fine.
    _rw("variantType"),
    _rw("variantType-preview"),
    # Only the stable shredding feature depends on the stable variant feature ([DS]).
    _rw("variantShredding", required_features={"variantType"}),
    _rw("variantShredding-preview"),
    _rw("catalogManaged", removable=True,
        required_features={"inCommitTimestamp", "vacuumProtocolCheck"}, in_spec=True,
        **_UNSUPPORTED),
    _w("coordinatedCommits-preview", removable=True,
       required_features={"inCommitTimestamp", "vacuumProtocolCheck"},
       properties=_COORDINATED_COMMITS_PROPS, **_UNSUPPORTED),
    _rw("geospatial", removable=True),
    _rw("geospatial-dev", removable=True),
    # New data files must materialize the partition columns (RFC): the DV purge writes them;
    # a file rewrite of a file that lacks them refuses.
    _w("materializePartitionColumns", removable=True,
       properties=("delta.enableMaterializePartitionColumnsFeature",)),
    # The reader-writer redirect feature overrides the default: no history protection ([DS]).
    _rw("redirectReaderWriter-preview", removable=True, requires_history_protection=False,
        properties=("delta.redirectReaderWriter-preview",), **_UNSUPPORTED),
    _w("redirectWriterOnly-preview", removable=True,
       properties=("delta.redirectWriterOnly-preview",), **_UNSUPPORTED),
    # Removable only with TRUNCATE HISTORY ([CP]); HistProt false is Spark's special case.
    _w(CHECKPOINT_PROTECTION, removable=True,
       properties=("delta.requireCheckpointProtectionBeforeVersion",)),
    _rw("adaptiveMetadata-preview",
        required_features={"catalogManaged", "rowTracking", "domainMetadata", "deletionVectors",
                           "columnMapping"}, **_UNSUPPORTED),
)

FEATURES: Mapping[str, TableFeature] = MappingProxyType({f.name: f for f in _CATALOG})
"""The production registry, keyed by the exact name used in protocol actions."""

_ACTIVE: ContextVar[Mapping[str, TableFeature]] = ContextVar("delta_downgrade_feature_registry",
                                                             default=FEATURES)


def active_registry() -> Mapping[str, TableFeature]:
    """The registry in force: :data:`FEATURES` unless a :func:`with_registry` block is active."""
    return _ACTIVE.get()


@contextmanager
def with_registry(registry: Mapping[str, TableFeature]) -> Iterator[Mapping[str, TableFeature]]:
    """Use ``registry`` instead of :data:`FEATURES` inside the block (for tests: [DS]'s test-only
    features). The previous registry is restored on exit, also on error."""
    for key, feature in registry.items():
        if key != feature.name:
            raise ValueError(f"registry key {key!r} does not match feature name {feature.name!r}")
    token = _ACTIVE.set(MappingProxyType(dict(registry)))
    try:
        yield _ACTIVE.get()
    finally:
        _ACTIVE.reset(token)


def registry_with(*extra: TableFeature,
                  base: Mapping[str, TableFeature] | None = None) -> Mapping[str, TableFeature]:
    """``base`` (default :data:`FEATURES`) plus ``extra``; a name clash, even differing only in
    case, is an error because lookups are case-insensitive."""
    out = dict(FEATURES if base is None else base)
    lower = {name.lower() for name in out}
    for feature in extra:
        if feature.name.lower() in lower:
            raise ValueError(f"feature {feature.name!r} is already registered")
        out[feature.name] = feature
        lower.add(feature.name.lower())
    return MappingProxyType(out)


def get_feature(name: str) -> TableFeature | None:
    """Exact-name lookup in the active registry, as protocol actions spell names."""
    return active_registry().get(name)


def lookup_feature(name: str) -> TableFeature | None:
    """Case-insensitive lookup in the active registry; None for an unknown name.

    Spark resolves user-typed names this way (``featureNameToFeature``), [DS] validation step 1.
    """
    registry = active_registry()
    exact = registry.get(name)
    if exact is not None:
        return exact
    wanted = name.lower()
    for feature in registry.values():
        if feature.name.lower() == wanted:
            return feature
    return None


def writable_under(configuration: Mapping[str, str]) -> frozenset[str]:
    """Features this package does not write in general whose tables it may write under this
    table configuration: ``coordinatedCommits-preview`` with no commit coordinator configured
    (none of its ``delta.coordinatedCommits.*`` properties set). Every commit of such a table is
    then a published file of ``_delta_log``: the Coordinated Commits RFC's filesystem table, on
    which delta-spark drops the feature with the protocol commit alone."""
    if any(key in configuration for key in _COORDINATED_COMMITS_PROPS):
        return frozenset()
    return frozenset({"coordinatedCommits-preview"})


# The ``delta.*`` table configuration keys of Delta 4.4 (``DeltaConfigs.getAllConfigs``, the keys
# of its running jar; tests/integration/test_registry_parity_with_delta_spark.py compares them).
# DROP FEATURE validation step 2 ([DS]): a name that is not in the protocol, starts with
# ``delta.`` and is one of these keys (case-insensitively) is a property, not a feature. Keys that
# Delta sets but does not declare as configs (row tracking's materialized column names) and
# Databricks-only settings (``delta.targetFileSize``) are not among them: Delta answers for those as
# for any unknown feature name.
_DELTA_CONFIG_KEYS: tuple[str, ...] = (
    "delta.appendOnly",
    "delta.autoOptimize",
    "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite",
    "delta.castIcebergTimeType",
    "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct",
    "delta.checkpointInterval",
    "delta.checkpointPolicy",
    "delta.checkpointRetentionDuration",
    "delta.columnMapping.maxColumnId",
    "delta.columnMapping.mode",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.coordinatedCommits.commitCoordinator-preview",
    "delta.coordinatedCommits.commitCoordinatorConf-preview",
    "delta.coordinatedCommits.tableConf-preview",
    "delta.dataSkippingNumIndexedCols",
    "delta.dataSkippingStatsColumns",
    "delta.dataSkippingStringPrefixLength",
    "delta.deletedFileRetentionDuration",
    "delta.dropFeatureTruncateHistory.retentionDuration",
    "delta.enableChangeDataCapture",
    "delta.enableChangeDataFeed",
    "delta.enableDeletionVectors",
    "delta.enableExpiredLogCleanup",
    "delta.enableFullRetentionRollback",
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
    "delta.enableIcebergCompatV3",
    "delta.enableInCommitTimestamps",
    "delta.enableMaterializePartitionColumnsFeature",
    "delta.enableRowTracking",
    "delta.enableTypeWidening",
    "delta.enableVariantShredding",
    "delta.ignoreIcebergBucketPartition",
    "delta.ignoreProtocolDefaults",
    "delta.inCommitTimestampEnablementTimestamp",
    "delta.inCommitTimestampEnablementVersion",
    "delta.isolationLevel",
    "delta.logRetentionDuration",
    "delta.minReaderVersion",
    "delta.minWriterVersion",
    "delta.parquet.format.version",
    "delta.randomizeFilePrefixes",
    "delta.randomPrefixLength",
    "delta.redirectReaderWriter-preview",
    "delta.redirectWriterOnly-preview",
    "delta.requireCheckpointProtectionBeforeVersion",
    "delta.rowTrackingSuspended",
    "delta.sampleRetentionDuration",
    "delta.setTransactionRetentionDuration",
    "delta.universalFormat.enabledFormats",
    "delta.universalFormat.iceberg.atomicConversion.supported",
    "delta.writePartitionColumnsToParquet",
)

DELTA_TABLE_PROPERTIES: frozenset[str] = frozenset(_DELTA_CONFIG_KEYS)
"""Delta's ``delta.*`` configuration keys, exact spelling. ``delta.feature.<name>`` and
``delta.constraints.<name>`` are not configs (they are per-name families) and are not listed."""

_DELTA_TABLE_PROPERTIES_LOWER = frozenset(p.lower() for p in DELTA_TABLE_PROPERTIES)


def is_delta_table_property(name: str) -> bool:
    """Whether ``name`` is a known ``delta.*`` table property, case-insensitively ([DS] step 2;
    e.g. ``DELTA.ENABLEROWTRACKING``)."""
    return name.lower() in _DELTA_TABLE_PROPERTIES_LOWER
