"""A listing from the checkpoint ``_last_checkpoint`` names (``list_from_last_checkpoint``): the
accessors exact on the tail answer without listing again; every other one refuses the partial
listing, and the listing extended to the whole log answers it as a whole one does. Real local
tables; the storage lists like an object store and records each ``_delta_log`` listing
(test_listing_tail.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, commit_path
from delta_downgrade.errors import PartialListingError
from delta_downgrade.log.read.listing import (
    extended_to_whole_log, list_from_last_checkpoint, list_whole_log,
)
from delta_downgrade.storage.local import LocalStorage

from tests.unit.log.test_listing_tail import T0, ListsLikeAnObjectStore, _add, _commit, _same, _table


def _with_checkpoint(tmp_path: Path, commits: int, at: int) -> Path:
    table = _table(tmp_path, commits)
    checkpoint_table(DeltaLog(str(table)), at, clock=ManualClock(T0))
    (table / "_delta_log" / f"{3:020d}.unknown").write_text("x")  # an unknown file before the hint
    return table


def test_tail_accessors_answer_without_listing_again(tmp_path: Path) -> None:
    table = _with_checkpoint(tmp_path, 20, 12)
    storage = ListsLikeAnObjectStore(table)
    listing = list_from_last_checkpoint(storage, str(table))
    assert storage.log_listings == [f"{11:020d}"]
    assert listing.listed_from == 12
    assert listing.latest_commit_version == 19 and listing.latest_checkpoint_version == 12
    assert listing.has_commits(13, 19) and not listing.has_commits(13, 20)
    assert [s.path for s in listing.commits_between(15, 16)] == [commit_path(15), commit_path(16)]
    assert listing.commit_status(14) == LocalStorage(table).status(commit_path(14))
    assert [c.version for c in listing.complete_checkpoints(listed_only=True)] == [12]
    assert storage.log_listings == [f"{11:020d}"] and listing.is_partial


def test_every_other_accessor_refuses_a_partial_listing_and_the_extended_one_answers(tmp_path: Path) -> None:
    table = _with_checkpoint(tmp_path, 20, 12)
    whole = list_whole_log(LocalStorage(table), str(table))
    questions = [
        lambda lst: sorted(lst.commits), lambda lst: lst.checkpoint_versions,
        lambda lst: [s.path for s in lst.unknown], lambda lst: sorted(lst.crcs),
        lambda lst: lst.commit_versions(), lambda lst: lst.contiguous_start(19),
        lambda lst: lst.missing_ranges(19), lambda lst: lst.has_commits(0, 19),
        lambda lst: [s.path for s in lst.commits_between(0, 19)], lambda lst: lst.commit_status(2),
        lambda lst: [c.version for c in lst.complete_checkpoints()],
    ]
    for question in questions:
        storage = ListsLikeAnObjectStore(table)
        listing = list_from_last_checkpoint(storage, str(table))
        with pytest.raises(PartialListingError):
            question(listing)
        extended = extended_to_whole_log(listing, storage, str(table))
        assert question(extended) == question(whole)
        assert storage.log_listings == [f"{11:020d}", None]  # extended with one whole listing
        assert listing.is_partial and listing.listed_from == 12 and not extended.is_partial
        _same(extended, whole)
    assert [s.path for s in whole.unknown] == [f"_delta_log/{3:020d}.unknown"]


def test_an_update_of_a_partial_listing_lists_only_the_tail(tmp_path: Path) -> None:
    table = _with_checkpoint(tmp_path, 20, 12)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    assert log.snapshot().version == 19
    _commit(table, 20, _add("f-20.parquet"))
    storage.log_listings.clear()
    assert log.refresh().snapshot().version == 20
    assert storage.log_listings == [f"{19:020d}"] and log.listing().is_partial
    _same(log.whole_listing(), list_whole_log(LocalStorage(table)))  # extended: the same as whole


def test_no_hint_or_a_hint_at_version_0_lists_the_whole_log(tmp_path: Path) -> None:
    table = _table(tmp_path, 5)
    storage = ListsLikeAnObjectStore(table)
    assert not list_from_last_checkpoint(storage, str(table)).is_partial
    checkpoint_table(DeltaLog(str(table)), 0, clock=ManualClock(T0))
    assert (table / LAST_CHECKPOINT).exists()
    assert not list_from_last_checkpoint(storage, str(table)).is_partial
    assert storage.log_listings == [None, None]
