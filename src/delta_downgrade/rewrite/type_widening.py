"""DROP FEATURE typeWidening / typeWidening-preview: rewrite the files that still store a narrower
type, then drop the type-change metadata (PROTOCOL.md "Type Widening").

PROTOCOL.md, "Type Widening": readers of a table with the feature must convert values of files
written before a type change to the current, wider type; ``delta.typeChanges`` in the field
metadata of the nearest ancestor struct field records each change (``fromType``, ``toType`` and,
for map keys/values and array elements, ``fieldPath``). When the feature is removed, "writers must
ensure no ``delta.typeChanges`` metadata key is present in the table schema. This may require
rewriting existing data files to ensure that all data files use the same field types as the table
schema", and ``delta.enableTypeWidening`` must not be set.

Steps, each its own commit so that a crash never redoes committed work:

1. ``UNSET TBLPROPERTIES`` of ``delta.enableTypeWidening`` when it is true (no further widening
   can start). Merely unsetting it is not a "change" (an unused feature drops in one run).
2. Decide per live file from its Parquet footer alone (no data read) whether it stores a type the
   table has widened since — at every level: struct fields, map keys and values, array elements.
3. Rewrite those files only, one output file per input file, casting to the table types (and
   keeping the table's physical layout: physical names and field ids under column mapping);
   commit ``remove`` + ``add`` (dataChange=false) as ``REORG`` in batches.
3b. Partition values of widened partition columns written in the old type's spelling
   (``rewrite/partition_values.py``) are spelled in the current type: in the replacement ``add``
   of a rewritten file, and by a metadata-only ``remove`` + ``add`` (dataChange=false, the same
   file) for the others, committed as ``REORG`` before the metadata goes, so that no reader sees
   an old spelling once the feature is gone.
4. Commit the schema without ``delta.typeChanges``: operation ``DROP FEATURE`` with the old
   ``columns``, as delta-spark names this commit.

New files of a clustered table keep ``clusteringProvider`` (``replacement_add``) and always get
statistics for the clustering columns (PROTOCOL.md "Clustered Table"): carried over from the
replaced file, completed from the new file's footer where a bound could not be widened.

Returns True (performedChanges) iff files were rewritten or metadata was removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec.structs import replace
from delta_downgrade.errors import FileLayoutError
from delta_downgrade.log.commit import rebase_unless_files_touched
from delta_downgrade.log.row_ids import row_tracking_of
from delta_downgrade.protocol.actions import AddFile, AnyAction
from delta_downgrade.protocol.clustering import clustering_columns
from delta_downgrade.protocol.schema import TYPE_CHANGES_KEY, type_change_fields
from delta_downgrade.rewrite.actions import remove_action, replacement_add
from delta_downgrade.rewrite.file_plan import FilePlan
from delta_downgrade.rewrite.file_rewriter import DEFAULT_WORKERS, FileRewriter, in_batches, rewrite_conf
from delta_downgrade.rewrite.partition_values import (
    respelled_add, respelled_partition_values, widened_partition_columns,
)
from delta_downgrade.rewrite.physical_schema import Naming, column_mapping_mode, schema_string, strip_field_metadata
from delta_downgrade.rewrite.row_tracking import MaterializedColumns, has_stable_values
from delta_downgrade.rewrite.stats import clustering_stats_leaves, stats_for_rewrite, with_footer_stats
from delta_downgrade.rewrite.writer_requirements import (
    ensure_files_can_be_rewritten, ensure_partition_columns_kept,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from delta_downgrade.drop.run import DropRun

ENABLE_KEY = "delta.enableTypeWidening"
DEFAULT_BATCH_FILES = 100
# Metadata-only re-adds write two log lines per file and read nothing: far larger batches.
RESPELL_BATCH_FILES = 10_000
#: delta-spark 4.4 commits the schema without ``delta.typeChanges`` as "DROP FEATURE" with the
#: changed ``columns`` (no featureName): the same name and parameter here.
METADATA_OPERATION = "DROP FEATURE"
#: The name of the rewrite's progress counts over all batches (``DropRun.progress``).
REORG_STEP = "REORG (type widening)"


def stale_files(run: "DropRun", rewriter: FileRewriter) -> list[tuple[AddFile, FilePlan]]:
    """The live files whose footer stores a narrower type than the table schema, with their plans.
    Only footers are read (concurrently); memory grows with the number of stale files."""
    snapshot = run.latest()
    metadata = snapshot.metadata
    configuration = dict(metadata.configuration)
    naming = Naming(column_mapping_mode(configuration), logical=False)
    files = list(snapshot.state().files.values())
    # Rewritten rows keep their stable row IDs and row commit versions (rewrite/row_tracking.py).
    preserve = MaterializedColumns.of(row_tracking_of(snapshot.protocol, metadata))
    return [(add, plan) for add, plan in
            rewriter.plans(files, snapshot.schema, metadata.partitionColumns, configuration, naming, preserve)
            if plan.widened]


def respellings(run: "DropRun") -> dict[str, dict[str, str | None]]:
    """Live file path -> its partition values spelled in the current types, for the files whose
    widened partition columns still hold another type's spelling (module doc, step 3b). A value
    that is no spelling of any type the column can have been widened from is refused, naming the
    file, before anything is written."""
    snapshot = run.latest()
    widened = widened_partition_columns(snapshot.schema, snapshot.metadata.partitionColumns or [])
    if not widened:
        return {}
    out: dict[str, dict[str, str | None]] = {}
    for add in snapshot.state().files.values():
        try:
            values = respelled_partition_values(add.partitionValues, widened)
        except ValueError as exc:
            raise FileLayoutError(f"data file {add.path}: {exc}; the typeWidening drop cannot spell it in "
                                  f"the column's current type, and nothing was written", table=run.table) from None
        if values is not None:
            out[add.path] = values
    return out


def rewrite_type_widening(run: "DropRun", *, batch_files: int = DEFAULT_BATCH_FILES,
                          workers: int = DEFAULT_WORKERS, spark: "SparkSession | None" = None) -> bool:
    """The pre-downgrade of typeWidening(-preview) (module doc)."""
    snapshot = run.latest()
    if str(snapshot.metadata.configuration.get(ENABLE_KEY, "")).strip().lower() == "true":
        run.commit([snapshot.metadata.with_configuration({ENABLE_KEY: None})], "UNSET TBLPROPERTIES",
                   {"properties": [ENABLE_KEY]})

    rewriter = FileRewriter(run.log, spark=spark, workers=workers)
    stale = stale_files(run, rewriter)
    respelled = respellings(run)
    latest = run.latest()
    if stale:
        purpose = "rewrite the files that store types narrower than the table's"
        ensure_files_can_be_rewritten(latest.protocol, latest.metadata, purpose=purpose)
        naming = Naming(column_mapping_mode(dict(latest.metadata.configuration)), logical=False)
        ensure_partition_columns_kept(latest.protocol, latest.metadata, stale, naming, purpose=purpose)
    clustering = clustering_columns(latest.state().live_domains.values())
    clustering_leaves = clustering_stats_leaves(latest.metadata, clustering) if clustering else []
    rewritten_paths = {a.path for a, _ in stale}
    metadata_only = [(add, respelled[add.path]) for add in latest.state().files.values()
                     if add.path in respelled and add.path not in rewritten_paths]
    total_bytes = sum(a.size or 0 for a, _ in stale)
    batches = in_batches(stale, batch_files)
    respell_batches = in_batches(metadata_only, RESPELL_BATCH_FILES)
    # The counts start the progress only for a real run: a dry run rewrites nothing.
    counts: dict[str, Any] = {} if not run.writes or not stale else {
        "step": REORG_STEP, "done": 0, "total": len(stale), "done_bytes": 0, "total_bytes": total_bytes}
    run.progress(f"REORG (type widening): {len(stale)} live file(s) store narrower types "
                 f"({total_bytes} bytes), {len(batches)} batch(es)", **counts)
    if respelled:
        run.progress(f"REORG (type widening): {len(respelled)} live file(s) spell widened partition values "
                     f"in an older type; {len(metadata_only)} of them re-added without a rewrite")
    rewritten = 0
    if not run.writes:
        now = run.clock.now_ms()
        # Planned as rewritten in place (same path, rows and DV): the real batches remove each
        # file and add its rewrite under a path Spark picks; a drop planned after this one
        # (drop-feature --for chains them) must still see every file.
        for batch in batches:
            run.commit([replace(a, dataChange=False) for a, _ in batch], "REORG",
                       {"predicate": "[]", "rewriteTypeWidening": True, "numFiles": len(batch)})
        for respell_batch in respell_batches:
            run.commit([replace(a, dataChange=False) for a, _ in respell_batch], "REORG",
                       {"predicate": "[]", "rewriteTypeWidening": True, "numFiles": len(respell_batch)})
        rewritten = len(stale) + len(metadata_only)
    else:
        if stale:
            done_bytes = 0
            with rewrite_conf(rewriter.session, run.progress):
                for number, batch in enumerate(batches, 1):
                    label = f"REORG batch {number}/{len(batches)}"
                    results = rewriter.rewrite_all(list(batch), run.progress, label)
                    now = run.clock.now_ms()
                    actions: list[AnyAction] = []
                    for (add, plan), result in zip(batch, results, strict=True):
                        actions.append(remove_action(add, now))
                        if result.path is not None:
                            stats = stats_for_rewrite(add.stats, result.num_rows, plan.widened)
                            stats = with_footer_stats(stats, result.footer, clustering_leaves,
                                                      wide=add.deletionVector is not None)
                            partition_values = respelled.get(add.path, dict(add.partitionValues or {}))
                            actions.append(replacement_add(add, result, partition_values=partition_values,
                                                           stats=stats))
                    replaced = {a.decoded_path for a, _ in batch}
                    # preserved: the plans wrote the stable values when row tracking is enabled
                    preserved = all(has_stable_values(a) and any(c.row_tracking for c in p.columns)
                                    for a, p in batch)
                    run.commit(actions, "REORG", {"predicate": "[]", "rewriteTypeWidening": True,
                                                  "numFiles": len(batch)},
                               resolve=rebase_unless_files_touched(replaced, actions, allow_new_files=True,
                                                                   operation="REORG"),
                               row_tracking_preserved=preserved)
                    rewritten += len(batch)
                    done_bytes += sum(a.size or 0 for a, _ in batch)
                    run.progress(f"REORG (type widening): {rewritten}/{len(stale)} files, "
                                 f"{done_bytes}/{total_bytes} bytes rewritten", step=REORG_STEP,
                                 done=rewritten, total=len(stale), done_bytes=done_bytes,
                                 total_bytes=total_bytes)
        for respell_batch in respell_batches:
            now = run.clock.now_ms()
            actions = []
            for add, values in respell_batch:
                actions += [remove_action(add, now), respelled_add(add, values)]
            replaced = {a.decoded_path for a, _ in respell_batch}
            run.commit(actions, "REORG", {"predicate": "[]", "rewriteTypeWidening": True,
                                          "numFiles": len(respell_batch)},
                       resolve=rebase_unless_files_touched(replaced, actions, allow_new_files=True,
                                                           operation="REORG"))
            rewritten += len(respell_batch)

    metadata_removed = False
    latest = run.latest()
    changed = type_change_fields(latest.schema)
    if changed:
        if run.writes:
            left = stale_files(run, rewriter) or respellings(run)
            if left:
                # A file the batches did not see (a concurrent writer): leave the metadata, the
                # downgrade's revalidation refuses, and a rerun rewrites it.
                run.progress(f"{len(left)} file(s) still store narrower types or spell partition values "
                             f"in an older type; keeping {TYPE_CHANGES_KEY}")
                return rewritten > 0
        new_schema = strip_field_metadata(latest.schema, (TYPE_CHANGES_KEY,))
        new_metadata = replace(latest.metadata, schemaString=schema_string(new_schema))
        run.commit([new_metadata], METADATA_OPERATION, {"columns": changed})
        metadata_removed = True
    return rewritten > 0 or metadata_removed
