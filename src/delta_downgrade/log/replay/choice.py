"""Which replay builds a small segment's state: the Python one, without importing pyarrow.

Both replays give the same :class:`~delta_downgrade.log.replay.reconcile.TableState` (the Arrow replay
is built to give the objects, order and errors of the Python one, and differential tests hold
them to it). What differs is the cost: the Arrow replay is far faster per action, but importing
pyarrow alone takes 0.1-0.15 s, more than the Python replay of a few hundred kilobytes of commits.
A command on a small table (``inspect`` of a table of a few commits) therefore stays on the Python
replay when the segment is small: no checkpoint (reading one needs pyarrow anyway) and commits
that are few and small, by their sizes in the listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from delta_downgrade.log.read.segment import LogSegment

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_pieces import Pieces
    from delta_downgrade.log.replay.reconcile import TableState
    from delta_downgrade.protocol.actions import Metadata, ProtocolAction
    from delta_downgrade.storage import Storage

#: A segment of at most this many commits (and no checkpoint) may be replayed in Python...
PYTHON_REPLAY_MAX_COMMITS = 100
#: ... when their files hold at most this many bytes together (the Python replay parses about
#: 20-40 MB/s of Spark-like add actions: 1 MiB is a few tens of milliseconds, under the import).
PYTHON_REPLAY_MAX_BYTES = 1 << 20


def python_replay_fits(segment: LogSegment) -> bool:
    """Whether ``segment`` is small enough for the Python replay: no checkpoint, at most
    :data:`PYTHON_REPLAY_MAX_COMMITS` commits whose listed sizes are known (a size below 0 is
    unknown) and add up to at most :data:`PYTHON_REPLAY_MAX_BYTES`."""
    if segment.checkpoint is not None or len(segment.commits) > PYTHON_REPLAY_MAX_COMMITS:
        return False
    total = 0
    for status in segment.commits:
        if status.size < 0:
            return False
        total += status.size
    return total <= PYTHON_REPLAY_MAX_BYTES


def replay_state(storage: Storage, table: str, segment: LogSegment, protocol: ProtocolAction,
                 metadata: Metadata, *, parsed_commits: Sequence[Pieces] | None = None) -> TableState | None:
    """The Arrow replay's state (:func:`delta_downgrade.log.replay.arrow_replay.replay_state`) of a
    segment too large for the Python replay; None for a small one, and for a log the Arrow replay
    does not take: the caller (``Snapshot.state``) then applies the commits one at a time.
    ``parsed_commits``: the segment's commits already parsed with the Python view's checks
    (:func:`~delta_downgrade.log.replay.arrow_replay.parse_commits_checked`)."""
    if python_replay_fits(segment):
        return None
    from delta_downgrade.log.replay.arrow_replay import replay_state as arrow_replay_state

    return arrow_replay_state(storage, table, segment, protocol, metadata, parsed_commits=parsed_commits)
