"""What every removable feature is: delta-spark's ``RemovableFeature`` contract as one base type,
and the steps its pre-downgrades share.

- ``remove_traces`` is ``preDowngradeCommand``: first disable the feature (so that concurrent
  writers cannot add traces), then clean up; it returns whether it changed anything
  (``removeFeatureTracesIfNeeded``).
- ``traces`` is ``validateDropInvariants``: what is left in the latest state; empty means the
  protocol may lose the feature. ``inspect`` reports the same traces as "in use".
- ``action_uses_feature`` is ``actionUsesFeature``: the history scan of the TRUNCATE HISTORY path
  (never protocol actions).
- ``properties_to_remove`` / ``actions_at_downgrade``: applied in the downgrade commit itself.
"""

from __future__ import annotations

import copy
import importlib
from typing import TYPE_CHECKING, Any, Callable, Union

from msgspec import Struct
from delta_downgrade.errors import NotSupportedYetError
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AnyAction, DomainMetadata
from delta_downgrade.protocol.features import TableFeature, get_feature

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.log.replay.arrow_replay import ArrowState
    from delta_downgrade.drop.run import DropRun

RewriteFunction = Callable[["DropRun"], Any]
"""A data rewrite: ``rewrite(run)`` rewrites the files that carry the feature's traces, commits,
and returns whether it changed the table; in a dry run it plans and checks, writing nothing."""
Rewrite = Union[str, RewriteFunction]
"""A rewrite named by its dotted path ``"package.module:function"``, or the function itself (a
caller's substitute, see :meth:`RemovableFeature.with_rewrite`)."""


class TraceContext(Struct):
    """What trace checks look at. The file state is loaded only for checks that need files, once
    per snapshot (the snapshot keeps it, and a drop carries it over its own commits)."""

    snapshot: Snapshot

    @property
    def configuration(self) -> dict[str, str]:
        return self.snapshot.metadata.configuration

    @property
    def arrow(self) -> ArrowState:
        """The snapshot's state as Arrow columns (:meth:`Snapshot.arrow_state`): counted with
        :mod:`delta_downgrade.log.replay.file_summary`, never a Python object per file."""
        return self.snapshot.arrow_state()

    def deletion_vector_counts(self) -> tuple[int, int]:
        """(live files with a deletion vector, rows they delete). A segment small enough for the
        Python replay is counted on its Python state (no pyarrow to import: ``replay_choice``)."""
        from delta_downgrade.log.replay.choice import python_replay_fits

        if python_replay_fits(self.snapshot.segment):
            with_dv = [f.dv for f in self.snapshot.state().files.values() if f.dv is not None]
            return len(with_dv), sum(dv.cardinality for dv in with_dv)
        from delta_downgrade.log.replay.file_summary import file_counts

        counts = file_counts(self.arrow)
        return counts.files_with_deletion_vectors, counts.deleted_rows_in_deletion_vectors

    @property
    def live_domains(self) -> dict[str, DomainMetadata]:
        return {d.domain: d for d in self.arrow.live_domains}

    def prop_true(self, key: str) -> bool:
        return str(self.configuration.get(key, "")).strip().lower() == "true"


class RewriteFootprint(Struct, frozen=True):
    """The live data files a feature's data rewrite would touch on one table, from the log alone
    (no footer, no data read): ``files`` and their ``bytes`` (``add.size``). ``exact`` False: an
    upper bound - the rewrite itself decides file by file from each footer (column mapping,
    type widening), and may keep some of these files as they are."""

    files: int = 0
    bytes: int = 0
    exact: bool = True

    @property
    def needed(self) -> bool:
        return self.files > 0


NO_REWRITE = RewriteFootprint()


class RemovableFeature:
    """One removable table feature. The default: no traces, nothing to clean, nothing used in
    history. ``name`` is the feature's name in the registry of :mod:`delta_downgrade.protocol.features`,
    whose entry (:attr:`spec`) holds everything the protocol says about it."""

    name: str = ""
    rewrite: Rewrite | None = None
    """The Spark data rewrite the pre-downgrade runs, if the feature has traces in data files."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def with_rewrite(self, rewrite: Rewrite) -> "RemovableFeature":
        """The same feature with ``rewrite`` as its data rewrite (tests and callers that run the
        rewrite with their own options)."""
        substituted = copy.copy(self)
        substituted.rewrite = rewrite
        return substituted

    @property
    def spec(self) -> TableFeature:
        """The registry entry of this feature."""
        found = get_feature(self.name)
        if found is None:
            raise KeyError(f"{self.name} is not in the feature registry")
        return found

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        """Every refusal this feature's drop can meet, checked before the drop's first write (a
        plan that cannot finish is refused up front, and ``--dry-run`` says the same)."""

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        """The table properties the pre-downgrade will set (None: unset), so that the plan's
        checks see the configuration the later steps (checkpoints) will run under."""
        return {}

    def remove_traces(self, run: DropRun) -> bool:
        return False

    def traces(self, ctx: TraceContext) -> list[str]:
        """Human-readable traces of the feature in the latest state; empty when none are left."""
        return []

    def rewrite_footprint(self, ctx: TraceContext) -> RewriteFootprint:
        """What this feature's data rewrite would touch in the latest state (``compat``'s plan);
        counted on the state's Arrow columns, never a Python object per file. The default: a
        feature without data rewrite touches nothing."""
        return NO_REWRITE

    def properties_to_remove(self) -> tuple[str, ...]:
        return ()

    def actions_at_downgrade(self, snapshot: Snapshot) -> list[AnyAction]:
        return []

    def action_uses_feature(self, action: AnyAction) -> bool:
        return False

    def checkpoint_uses_feature(self, checkpoint: CheckpointInstance | None) -> bool:
        """Whether the checkpoint the retained history starts from uses the feature by its very
        kind (the state it holds is checked action by action)."""
        return False


def require_rewrite(run: DropRun, rewrite: Rewrite | None, why: str) -> RewriteFunction:
    """The data rewrite ``rewrite`` of the feature being dropped, or a clear refusal before
    anything is written. A dotted path is imported only here, when a drop needs it: PySpark is an
    optional dependency, and the rewrite modules are not needed to read a table."""
    if callable(rewrite):
        return rewrite
    try:
        import pyspark  # noqa: F401 - without Spark there is no rewrite
    except ImportError:
        reason = ("PySpark is not installed: on Databricks it comes with the runtime; locally install "
                  "delta-downgrade[local] (pyspark 4.2)")
    else:
        function = _import_rewrite(rewrite) if rewrite else None
        if function is not None:
            return function
        reason = "this installation has no Spark rewrite for it"
    raise NotSupportedYetError(
        f"dropping {run.feature} needs a Spark data rewrite ({why}), but {reason}. Nothing was written",
        table=run.table, feature=run.feature)


def _import_rewrite(path: str) -> RewriteFunction | None:
    """``module:function``, or None when the module cannot be imported here."""
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    function: RewriteFunction = getattr(module, attribute)
    return function


def commit_properties(run: DropRun, snapshot: Snapshot, updates: dict[str, str | None],
                      operation: str, *, allow_deletion_vectors: bool = True) -> int:
    """One metadata-only commit of ``updates`` (None unsets a key) on top of ``snapshot``.

    It depends only on the metadata it read, so blind appends that land first do not change what
    it means: it is retried on top of them (``rebase_over_blind_appends``); anything else, and
    unless ``allow_deletion_vectors`` a winner writing deletion vectors, is a real conflict.
    Parameters as Delta records them: UNSET lists the keys, SET the key/value map."""
    # Imported here, as the run is (TYPE_CHECKING above): the catalogue of features is loaded by
    # every command, and inspect, compat and the other read-only ones need no commit machinery.
    from delta_downgrade.log.commit import rebase_over_blind_appends

    actions = [snapshot.metadata.with_configuration(updates)]
    keys: object = sorted(updates) if operation.startswith("UNSET") else updates
    return run.commit(actions, operation, {"properties": keys}, read_version=snapshot.version,
                      resolve=rebase_over_blind_appends(actions, operation=operation,
                                                        allow_deletion_vectors=allow_deletion_vectors))


class DataRewriteFeature(RemovableFeature):
    """A feature whose traces live in the data files: only its Spark rewrite removes them. A table
    that still has traces and no rewrite to run is refused, never half-dropped."""

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        # The rewrite's own refusals (unsupported tables, invalid column names, unreadable
        # footers …) come from its planning run, which the drop's plan makes before any write.
        traces = self.traces(TraceContext(snapshot))
        if traces:
            require_rewrite(run, self.rewrite, "; ".join(traces))

    def remove_traces(self, run: DropRun) -> bool:
        traces = self.traces(TraceContext(run.latest()))
        if not traces:
            return False
        rewrite = require_rewrite(run, self.rewrite, "; ".join(traces))
        return bool(rewrite(run))
