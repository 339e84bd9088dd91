"""The rules of PROTOCOL.md "Action Reconciliation", stated once, and the reconciled state as
Python objects.

The rules, for the file actions of a log segment (a checkpoint, then commits ``0 .. n-1`` after it):

* **Identity** - a logical file is its URL-decoded ``path`` and the unique id of its deletion
  vector (:func:`file_key`).
* **Rank** - every file action has a rank: the checkpoint's actions :data:`CHECKPOINT_RANK`;
  commit ``c``'s removes ``2c + 1`` and its adds ``2c + 2`` (:func:`commit_rank`). A commit holds at
  most one action per logical file, so putting its removes first makes remove(path, old DV) +
  add(path, new DV) reconcile in either line order.
* **Cancel** - an action is cancelled by an action of the other kind for the same logical file
  with a *higher* rank. A checkpoint is already reconciled: its adds and removes share one rank and
  never cancel each other (an invalid checkpoint holding both keeps both).
* **Value and place** - of the actions of one kind that are not cancelled, the last (by rank,
  then line) is the file's value; the first keeps its place in the state (a file re-added without
  a remove, as a row-tracking backfill does, stays where it was).
* ``txn`` by ``appId`` and ``domainMetadata`` by ``domain``: the last wins, in the place of the
  first (removed domains stay, as tombstones).

Two executors apply them: the Arrow replay (:mod:`delta_downgrade.log.replay.arrow_replay`) to a whole
segment at once, and :meth:`TableState.apply_checkpoint` / :meth:`TableState.apply_commit` one
checkpoint or commit at a time, on top of a state already reconciled (a cached snapshot plus the
few commits after it, or a drop's read snapshot plus the commits that won a race).
"""

from __future__ import annotations

from typing import Iterable, Sequence
from urllib.parse import unquote

from msgspec import Struct, field
from delta_downgrade.protocol.actions import (AddFile, AnyAction, DomainMetadata, Metadata, ProtocolAction,
                                              RemoveFile, Txn)

FileKey = tuple[str, str | None]

#: The rank of a checkpoint's file actions.
CHECKPOINT_RANK = 0
#: Ranks per commit: its removes, then its adds.
RANKS_PER_COMMIT = 2
#: Offset of each kind of file action within its commit's ranks.
RANK_OFFSET = {"remove": 1, "add": 2}


def commit_rank(commit: int, kind: str) -> int:
    """The rank of the ``kind`` actions (``"add"``/``"remove"``) of the segment's commit
    ``commit`` (0-based, the first commit after the checkpoint being 0)."""
    return RANKS_PER_COMMIT * commit + RANK_OFFSET[kind]


def file_key(action: AddFile | RemoveFile) -> FileKey:
    """A logical file is identified by its URL-decoded path and the unique id of its deletion
    vector (PROTOCOL.md, "Reconciliation")."""
    path = action.path
    decoded = unquote(path) if "%" in path else path  # = action.decoded_path, for a fraction of the time
    if action.deletionVector is None:
        return (decoded, None)
    dv = action.dv
    return (decoded, dv.unique_id if dv else None)


def commit_order(actions: Iterable[AnyAction]) -> list[AnyAction]:
    """A commit's actions in the order of their ranks: removes first, the rest in line order."""
    return sorted(actions, key=lambda a: 0 if isinstance(a, RemoveFile) else 1)


class TableState(Struct):
    """The reconciled state of a version (PROTOCOL.md, "Action Reconciliation"), dicts in the
    place order of the rules above."""

    version: int
    protocol_action: ProtocolAction
    metadata: Metadata
    files: dict[FileKey, AddFile] = field(default_factory=dict)
    tombstones: dict[FileKey, RemoveFile] = field(default_factory=dict)
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)  # removed ones included

    @property
    def live_domains(self) -> dict[str, DomainMetadata]:
        return {k: d for k, d in self.domains.items() if not d.removed}

    def copy(self) -> "TableState":
        """A copy whose dicts can be changed independently (the actions are immutable)."""
        return TableState(self.version, self.protocol_action, self.metadata, dict(self.files),
                          dict(self.tombstones), dict(self.txns), dict(self.domains))

    def apply(self, action: AnyAction) -> None:
        """One action with a higher rank than every action applied so far (a dict keeps a key's
        place when its value changes: the first uncancelled action keeps the place)."""
        if isinstance(action, AddFile):
            key = file_key(action)
            self.files[key] = action
            self.tombstones.pop(key, None)
        elif isinstance(action, RemoveFile):
            key = file_key(action)
            self.files.pop(key, None)
            self.tombstones[key] = action
        elif isinstance(action, Txn):
            self.txns[action.appId] = action
        elif isinstance(action, DomainMetadata):
            self.domains[action.domain] = action
        elif isinstance(action, ProtocolAction):
            self.protocol_action = action
        elif isinstance(action, Metadata):
            self.metadata = action

    def apply_commit(self, actions: Iterable[AnyAction]) -> None:
        """The next commit's actions, in the order of their ranks."""
        for action in commit_order(actions):
            self.apply(action)

    def apply_checkpoint(self, txns: Sequence[Txn], domains: Sequence[DomainMetadata],
                         adds: Sequence[AddFile], removes: Sequence[RemoveFile]) -> None:
        """A checkpoint's actions, on an empty state: one rank, so that its removes are
        tombstones only and never cancel one of its adds."""
        for action in (*txns, *domains, *adds):
            self.apply(action)
        for remove in removes:
            self.tombstones[file_key(remove)] = remove
