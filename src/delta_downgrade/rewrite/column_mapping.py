"""DROP FEATURE columnMapping: rewrite the data files with logical column names
(PROTOCOL.md "Column Mapping", delta-spark's ``RemoveColumnMappingCommand``).

PROTOCOL.md, "Column Mapping":

- every column (at every nesting level) has a logical name (``name``), a physical name
  (``delta.columnMapping.physicalName``) and an id (``delta.columnMapping.id``) in its field
  metadata; ``delta.columnMapping.mode`` says which of them the data files use: ``name`` mode
  resolves Parquet columns by physical name, ``id`` mode by Parquet field id;
- partition values and column statistics are keyed by physical names;
- ``delta.columnMapping.nested.ids`` holds the ids of array elements and map keys/values
  (icebergCompat); ``parquet.field.id`` may appear as well.

A table without column mapping (mode ``none``) reads every Parquet column, at every level, by its
logical name. So removing the feature means: every live data file must hold its columns under
their logical names and without field ids, partition values and stats must be keyed by logical
names, and the schema and configuration must lose every column-mapping key — all in ONE commit,
because a reader must never see the new schema with a file that still uses physical names
(delta-rs, for one, silently reads such columns as NULL).

The commit is ``REMOVE COLUMN MAPPING``: ``remove`` (dataChange=false) of every rewritten file,
``add`` (dataChange=false) of its replacement, ``add`` of files that already match (re-keyed
partition values and stats), the clustering domain naming the logical names (PROTOCOL.md
"Clustered Table" records physical names, which are the logical ones once the mapping is gone;
``protocol/clustering.py``), and the new ``metaData``. On a clustered table every ``add`` has
statistics for the clustering columns (completed from the file's footer when missing). Data files
are written first; a crash before the commit leaves only orphan files (VACUUM removes them later),
and a rerun starts over.

The rewrite keeps row order within each file (each input file is read as exactly one split by one
task and written as one output file), so deletion vectors, which address rows by their position in
the file, stay valid and are carried over unchanged. A rewritten file is a new file for row
tracking: its ``add`` gets fresh row IDs at commit time, and when row tracking is enabled each
row's stable row ID and row commit version are written into the materialized columns
(rewrite/row_tracking.py). Files kept under their path keep their row IDs.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace
from delta_downgrade.errors import InvalidColumnNamesForMappingRemovalError
from delta_downgrade.log.commit import rebase_unless_files_touched
from delta_downgrade.log.row_ids import row_tracking_of
from delta_downgrade.protocol.actions import AddFile, AnyAction
from delta_downgrade.protocol.clustering import clustering_columns, domains_with_logical_names
from delta_downgrade.protocol.schema import CM_METADATA_KEYS
from delta_downgrade.rewrite.actions import remove_action, replacement_add
from delta_downgrade.rewrite.file_plan import FilePlan
from delta_downgrade.rewrite.file_rewriter import DEFAULT_WORKERS, FileRewriter, Rewritten, rewrite_conf
from delta_downgrade.rewrite.physical_schema import (
    MODE_KEY, Naming, column_mapping_mode, iter_named_fields, physical_name, schema_string,
    strip_field_metadata,
)
from delta_downgrade.rewrite.row_tracking import MaterializedColumns, has_stable_values
from delta_downgrade.rewrite.staging import is_output_dir_name
from delta_downgrade.rewrite.stats import clustering_stats_leaves, rekey_stats, stats_for_rewrite, with_footer_stats
from delta_downgrade.rewrite.writer_requirements import ensure_files_can_be_rewritten, ensure_partition_columns_kept

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from delta_downgrade.drop.run import DropRun

MAX_ID_KEY = "delta.columnMapping.maxColumnId"
# The icebergCompat RFC spelled the nested-ids key this way; strip it too.
RFC_NESTED_IDS_KEY = "parquet.field.nested.ids"
COLUMN_MAPPING_FIELD_KEYS = (*CM_METADATA_KEYS, RFC_NESTED_IDS_KEY)

# delta-spark refuses to remove column mapping when a column name holds one of these characters:
# without column mapping such names are not valid Parquet column names for Spark.
INVALID_NAME_CHARS = " ,;{}()\n\t="
INVALID_NAMES_ERROR = InvalidColumnNamesForMappingRemovalError.error_class


def invalid_column_names(schema: dict[str, Any]) -> list[str]:
    """Dotted paths of the fields whose own name holds a character of ``INVALID_NAME_CHARS``."""
    return [".".join(path) for path, f in iter_named_fields(schema)
            if any(c in str(f["name"]) for c in INVALID_NAME_CHARS)]


# --- the drop ------------------------------------------------------------------------------------

def check_column_names(run: "DropRun", schema: dict[str, Any]) -> None:
    bad = invalid_column_names(schema)
    if bad:
        listed = ", ".join(f"`{b}`" for b in bad)
        raise InvalidColumnNamesForMappingRemovalError(
            f"cannot remove column mapping: column name(s) {listed} contain one of the characters "
            f"' ,;{{}}()\\n\\t=' that Parquet files without column mapping cannot hold. Rename the "
            f"column(s) first (ALTER TABLE … RENAME COLUMN); nothing was written",
            table=run.table, feature="columnMapping", params={"invalidColumnNames": ", ".join(bad)})


def remove_column_mapping(run: "DropRun", *, workers: int = DEFAULT_WORKERS,
                          spark: "SparkSession | None" = None) -> bool:
    """The pre-downgrade of columnMapping: one ``REMOVE COLUMN MAPPING`` commit (module doc).

    Returns True (performedChanges) when it committed (or, in a dry run, would commit) anything.
    """
    snapshot = run.latest()
    metadata = snapshot.metadata
    schema = snapshot.schema
    configuration = dict(metadata.configuration)
    mode = column_mapping_mode(configuration)
    check_column_names(run, schema)

    new_schema = strip_field_metadata(schema, COLUMN_MAPPING_FIELD_KEYS)
    new_metadata = replace(metadata.with_configuration({MODE_KEY: None, MAX_ID_KEY: None}),
                           schemaString=schema_string(new_schema))
    files = list(snapshot.state().files.values())
    live_domains = list(snapshot.state().live_domains.values())
    domains = domains_with_logical_names(live_domains, schema)
    partition_keys = {physical_name(f, mode): str(f["name"]) for f in schema.get("fields", [])
                      if f["name"] in metadata.partitionColumns}

    def rekeyed_partitions(add: AddFile) -> dict[str, str | None]:
        return {partition_keys.get(k, k): v for k, v in (add.partitionValues or {}).items()}

    if mode == "none":
        # Files already use logical names (a reader with mode none resolves by them); only the
        # leftover field metadata and properties go.
        if not run.writes:
            run.progress("would strip column-mapping field metadata and properties (no file uses "
                         "physical names: the mode is none)")
        run.commit([*domains, new_metadata], "REMOVE COLUMN MAPPING", {"numRewrittenFiles": 0})
        return True

    naming = Naming(mode, logical=True)
    # A partitioned table's files sit in directories named `<physical name>=<value>` (Delta
    # writers name partition directories Hive-style by the column's physical name) or in random
    # prefixes: once the mapping is gone, a writer without column mapping files them under
    # `<logical name>=<value>/`, and readers that take partition values from such paths (Polars)
    # refuse a directory naming a column the table lacks and read NULL without one. The rewrites
    # go there, and a file already using logical names but filed elsewhere is rewritten too.
    output_parent = None
    if metadata.partitionColumns:
        def output_parent(add: AddFile) -> str:
            return hive_partition_path(metadata.partitionColumns, rekeyed_partitions(add))
    rewriter = FileRewriter(run.log, spark=spark, workers=workers, output_parent=output_parent)
    tracking = row_tracking_of(snapshot.protocol, metadata)
    preserve = MaterializedColumns.of(tracking)
    plans: list[tuple[AddFile, FilePlan]] = []
    keep: list[tuple[AddFile, FilePlan]] = []
    for add, plan in rewriter.plans(files, schema, metadata.partitionColumns, configuration, naming, preserve):
        filed = output_parent is None or filed_under(add, output_parent(add))
        (keep if plan.identity and filed else plans).append((add, plan))
    total_bytes = sum(a.size or 0 for a, _ in plans)
    run.progress(f"REMOVE COLUMN MAPPING ({mode} mode): {len(plans)} of {len(files)} live file(s) "
                 f"to rewrite ({total_bytes} bytes); {len(keep)} already use logical names")
    if plans:
        purpose = "remove column mapping"
        ensure_files_can_be_rewritten(snapshot.protocol, metadata, purpose=purpose)
        ensure_partition_columns_kept(snapshot.protocol, metadata, plans, naming, purpose=purpose)
    clustering_leaves = clustering_stats_leaves(metadata, clustering_columns(live_domains), logical=True)

    def rekey(stats: dict[str, Any]) -> dict[str, Any]:
        return rekey_stats(stats, schema, mode)

    now = run.clock.now_ms()
    if not run.writes:
        # Planned as rewritten in place: the same path, rows and deletion vector (carried over,
        # see the module doc), partition values under logical names. The real commit removes each
        # file and adds its rewrite under a path Spark picks; a drop planned after this one
        # (drop-feature --for chains them) must still see every file and its DV.
        planned = [replace(a, partitionValues=rekeyed_partitions(a), dataChange=False) for a, _ in (*plans, *keep)]
        run.commit([*planned, *domains, new_metadata], "REMOVE COLUMN MAPPING",
                   {"numRewrittenFiles": len(plans)})
        return True

    rewritten: list[Rewritten] = []
    if plans:
        with rewrite_conf(rewriter.session, run.progress):
            rewritten = rewriter.rewrite_all(plans, run.progress, "REMOVE COLUMN MAPPING")
    by_source = {id(r.source): r for r in rewritten}
    actions: list[AnyAction] = []
    now = run.clock.now_ms()
    stats: str | None
    for add, plan in plans:
        result = by_source[id(add)]
        actions.append(remove_action(add, now))
        if result.path is not None:
            stats = stats_for_rewrite(add.stats, result.num_rows, plan.widened, rekey)
            stats = with_footer_stats(stats, result.footer, clustering_leaves,
                                      wide=add.deletionVector is not None)
            actions.append(replacement_add(add, result, partition_values=rekeyed_partitions(add), stats=stats))
    for add, plan in keep:
        stats = add.stats
        # A kept file without row IDs gets fresh ones at commit time, which needs numRecords:
        # the footer's row count gives it. A clustered table needs clustering-column stats.
        if stats or clustering_leaves or (tracking.assigns and add.baseRowId is None):
            stats = stats_for_rewrite(stats, plan.num_rows, [], rekey)
            stats = with_footer_stats(stats, lambda add=add: rewriter.footer_metadata(add), clustering_leaves,
                                      wide=add.deletionVector is not None)
        actions.append(replace(add, partitionValues=rekeyed_partitions(add), stats=stats, dataChange=False))
    actions.extend(domains)
    actions.append(new_metadata)
    replaced = {a.decoded_path for a in files}
    resolver = rebase_unless_files_touched(replaced, actions, allow_new_files=False,
                                          operation="REMOVE COLUMN MAPPING")
    # Every copied row's stable values are preserved when the materialized columns exist and
    # every rewritten file has its defaults (PROTOCOL.md "Writer Requirements for Row Tracking").
    preserved = not plans or (preserve is not None and all(has_stable_values(a) for a, _ in plans))
    run.commit(actions, "REMOVE COLUMN MAPPING",
               {"numRewrittenFiles": len(plans), "numRekeyedFiles": len(keep)}, resolve=resolver,
               row_tracking_preserved=preserved)
    return True


def filed_under(add: AddFile, directory: str) -> bool:
    """Whether ``add``'s file sits directly in ``directory`` (table-relative, decoded), or in an
    output directory of a rewrite there."""
    from urllib.parse import unquote

    parent = posixpath.dirname(unquote(add.path))
    return parent == directory or (posixpath.dirname(parent) == directory
                                   and is_output_dir_name(posixpath.basename(parent)))


#: What Spark escapes in a partition directory's name (ExternalCatalogUtils.escapePathName), as
#: ``%XX``; a null or empty value is Hive's default partition.
_HIVE_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def hive_partition_path(columns: list[str], values: dict[str, str | None]) -> str:
    """``<column>=<value>/...`` in the table's partition column order, escaped as Spark names
    partition directories."""
    def escape(text: str) -> str:
        return "".join(f"%{ord(ch):02X}" if ch in _HIVE_ESCAPED else ch for ch in text)

    return "/".join(f"{escape(c)}={escape(v) if v else HIVE_DEFAULT_PARTITION}"
                    for c, v in ((c, values.get(c)) for c in columns))
