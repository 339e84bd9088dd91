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

from dataclasses import dataclass
from typing import Callable

from delta_downgrade.errors import NotSupportedYetError
from delta_downgrade.log.commit import rebase_over_blind_appends
from delta_downgrade.log.snapshot import Snapshot, TableState
from delta_downgrade.operations.drop_run import DropRun
from delta_downgrade.protocol.actions import AnyAction
from delta_downgrade.protocol.features import TableFeature, get_feature


@dataclass
class TraceContext:
    """What trace checks look at. ``state`` is loaded only for checks that need files, and once
    for all the features of one inspection."""

    snapshot: Snapshot
    _state: TableState | None = None

    @property
    def configuration(self) -> dict[str, str]:
        return self.snapshot.metadata.configuration

    @property
    def state(self) -> TableState:
        if self._state is None:
            self._state = self.snapshot.state()
        return self._state

    def prop_true(self, key: str) -> bool:
        return str(self.configuration.get(key, "")).strip().lower() == "true"


class RemovableFeature:
    """One removable table feature. The default: no traces, nothing to clean, nothing used in
    history. ``name`` is the feature's name in the registry of :mod:`delta_downgrade.protocol.features`,
    whose entry (:attr:`spec`) holds everything the protocol says about it."""

    name: str = ""

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

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

    def properties_to_remove(self) -> tuple[str, ...]:
        return ()

    def actions_at_downgrade(self, snapshot: Snapshot) -> list[AnyAction]:
        return []

    def action_uses_feature(self, action: AnyAction) -> bool:
        return False


def require_hook(run: DropRun, name: str, why: str) -> Callable[[DropRun], bool]:
    """The data-rewrite step ``name``, or a clear refusal before anything is written."""
    hook = run.hooks.get(name)
    if hook is not None:
        return hook
    try:
        import pyspark  # noqa: F401
        reason = "this installation has no Spark rewrite for it"
    except ImportError:
        reason = ("PySpark is not installed: on Databricks it comes with the runtime; locally install "
                  "delta-downgrade[local] (pyspark 4.2)")
    raise NotSupportedYetError(
        f"dropping {run.feature} needs a Spark data rewrite ({why}), but {reason}. Nothing was written",
        table=run.table, feature=run.feature)


def commit_properties(run: DropRun, snapshot: Snapshot, updates: dict[str, str | None],
                      operation: str, *, allow_deletion_vectors: bool = True) -> int:
    """One metadata-only commit of ``updates`` (None unsets a key) on top of ``snapshot``.

    It depends only on the metadata it read, so blind appends that land first do not change what
    it means: it is retried on top of them (``rebase_over_blind_appends``); anything else, and
    unless ``allow_deletion_vectors`` a winner writing deletion vectors, is a real conflict.
    Parameters as Delta records them: UNSET lists the keys, SET the key/value map."""
    actions = [snapshot.metadata.with_configuration(updates)]
    keys: object = sorted(updates) if operation.startswith("UNSET") else updates
    return run.commit(actions, operation, {"properties": keys}, read_version=snapshot.version,
                      resolve=rebase_over_blind_appends(actions, operation=operation,
                                                        allow_deletion_vectors=allow_deletion_vectors))


def rehearse(run: DropRun, hook: Callable[[DropRun], bool]) -> None:
    """Run a data-rewrite hook as a dry run of the same table before the drop's first write.
    Every rewrite checks what can stop it (unreadable DVs, unsupported tables, invalid column
    names, unreadable footers …) before its dry-run plan, so a refusal surfaces here, with nothing
    written, instead of after the drop's first commits."""
    hook(DropRun(run.log, run.feature, clock=run.clock, dry_run=True, hooks=run.hooks))


class DataRewriteFeature(RemovableFeature):
    """A feature whose traces live in the data files: only a Spark rewrite removes them. A table
    that still has traces and no rewrite to run is refused, never half-dropped."""

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        traces = self.traces(TraceContext(snapshot))
        if traces:
            rehearse(run, require_hook(run, f"remove_{self.name}", "; ".join(traces)))

    def remove_traces(self, run: DropRun) -> bool:
        traces = self.traces(TraceContext(run.latest()))
        if not traces:
            return False
        hook = require_hook(run, f"remove_{self.name}", "; ".join(traces))
        return bool(hook(run))
