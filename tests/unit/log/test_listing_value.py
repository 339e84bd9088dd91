"""A listing of ``_delta_log`` is a value: nothing changes it once built, and each way of getting
another one (after writing files, refreshed, extended to the whole log) returns a new value and
leaves the one it started from as it was. Real local tables (test_listing_tail.py)."""

from __future__ import annotations


from pathlib import Path

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.errors import CorruptLogError, PartialListingError
from delta_downgrade.log.read.listing import (
    LogListing, after_writing, extended_to_whole_log, list_from_last_checkpoint,
    list_whole_log, listing_of, refreshed,
)
from delta_downgrade.storage import FileStatus
from delta_downgrade.storage.local import LocalStorage

from tests.collector_generations import in_generation
from tests.unit.log.test_listing_tail import T0, _add, _commit, _same, _table


def _snapshot_of(listing: LogListing) -> tuple:
    """Everything a listing answers from its listed files (exact on a partial listing too)."""
    return (listing.listed_from, listing.last_checkpoint, dict(listing.listed_commits),
            listing.listed_unknown, listing.latest_commit_version, listing.latest_checkpoint_version,
            [c.paths for c in listing.complete_checkpoints(listed_only=True)])


def test_a_listing_cannot_be_changed(tmp_path: Path) -> None:
    table = _table(tmp_path, 4)
    listing = list_whole_log(LocalStorage(table), str(table))
    before = _snapshot_of(listing)
    with pytest.raises(AttributeError):
        listing.listed_from = 2  # type: ignore[misc]  # what is refused
    with pytest.raises(AttributeError):
        listing.last_checkpoint = {"version": 3}  # type: ignore[misc]  # what is refused
    with pytest.raises(TypeError):
        listing.commits[9] = FileStatus(commit_path(9), 1, T0)  # type: ignore[index]  # read-only view
    with pytest.raises(TypeError):
        del listing.commits[0]  # type: ignore[attr-defined]  # read-only view
    with pytest.raises(TypeError):
        listing.crcs[0] = FileStatus("_delta_log/0.crc", 1, T0)  # type: ignore[index]  # read-only view
    with pytest.raises(AttributeError):
        listing.checkpoints.append(None)  # type: ignore[attr-defined]  # a tuple
    with pytest.raises(AttributeError):
        listing.commit_versions().append(9)  # type: ignore[attr-defined]  # a tuple
    assert not hasattr(listing, "complete")  # nothing completes a listing in place
    assert _snapshot_of(listing) == before


def test_after_writing_returns_a_new_listing_and_keeps_the_old_one(tmp_path: Path) -> None:
    table = _table(tmp_path, 4)
    storage = LocalStorage(table)
    previous = list_whole_log(storage, str(table))
    before = _snapshot_of(previous)
    _commit(table, 4, _add("f-4.parquet"))
    after = after_writing(previous, storage, str(table), [storage.status(commit_path(4))])
    assert after is not previous
    assert after.latest_commit_version == 4 and list(after.commit_versions()) == [0, 1, 2, 3, 4]
    assert _snapshot_of(previous) == before and previous.latest_commit_version == 3
    _same(after, list_whole_log(storage, str(table)))


def test_refreshed_returns_a_new_listing_and_keeps_the_old_one(tmp_path: Path) -> None:
    table = _table(tmp_path, 4)
    storage = LocalStorage(table)
    previous = list_whole_log(storage, str(table))
    before = _snapshot_of(previous)
    _commit(table, 4, _add("f-4.parquet"))
    (table / "_delta_log" / commit_path(0).rsplit("/", 1)[1]).unlink()  # a metadata cleanup
    for stat_known in (False, True):
        now = refreshed(previous, storage, str(table), stat_known=stat_known)
        assert now is not previous
        assert list(now.commit_versions()) == [1, 2, 3, 4]
        _same(now, list_whole_log(storage, str(table)))
    assert _snapshot_of(previous) == before and list(previous.commit_versions()) == [0, 1, 2, 3]


def test_extended_to_whole_log_returns_a_new_listing_and_keeps_the_partial_one(tmp_path: Path) -> None:
    table = _table(tmp_path, 10)
    checkpoint_table(DeltaLog(str(table)), 6, clock=ManualClock(T0))
    storage = LocalStorage(table)
    partial = list_from_last_checkpoint(storage, str(table))
    before = _snapshot_of(partial)
    assert partial.listed_from == 6
    whole = extended_to_whole_log(partial, storage, str(table))
    assert whole is not partial and not whole.is_partial
    assert _snapshot_of(partial) == before and partial.is_partial
    with pytest.raises(PartialListingError):
        partial.commits  # noqa: B018 - the question itself is what is refused
    _same(whole, list_whole_log(storage, str(table)))
    assert extended_to_whole_log(whole, storage, str(table)) is whole  # already whole: that value


def test_the_log_hands_out_values_its_later_listings_do_not_change(tmp_path: Path) -> None:
    table = _table(tmp_path, 10)
    checkpoint_table(DeltaLog(str(table)), 6, clock=ManualClock(T0))
    log = DeltaLog(str(table))
    first = log.listing()
    before = _snapshot_of(first)
    assert first.is_partial
    whole = log.whole_listing()
    assert whole is not first and log.listing() is whole  # the whole one is current from then on
    _commit(table, 10, _add("f-10.parquet"))
    assert log.refresh().listing().latest_commit_version == 10
    assert _snapshot_of(first) == before and whole.latest_commit_version == 9


def test_listing_of_given_files_needs_no_storage() -> None:
    files = [FileStatus(commit_path(v), 10, T0 + v) for v in range(3)]
    listing = listing_of(files)
    assert list(listing.commit_versions()) == [0, 1, 2] and not listing.is_partial
    assert listing.contiguous_start(2) == 0 and listing.last_checkpoint is None


def test_a_listing_pauses_the_cycle_collector_and_leaves_it_as_it_found_it(tmp_path: Path, monkeypatch) -> None:
    """The builders pause the cyclic garbage collector while they make their many acyclic
    objects: paused during the directory's read, running again after (also when the listing
    fails), and left paused when the caller had paused it."""
    import gc

    table = _table(tmp_path, 4)
    storage = LocalStorage(table)
    seen: list[bool] = []
    list_entries = storage.list_entries

    def recorded(*args, **kwargs):
        seen.append(gc.isenabled())
        return list_entries(*args, **kwargs)

    monkeypatch.setattr(storage, "list_entries", recorded)
    assert gc.isenabled()
    listing = list_whole_log(storage, str(table))
    assert seen == [False] and gc.isenabled()
    refreshed(listing, storage, str(table), stat_known=True)
    assert seen == [False, False] and gc.isenabled()

    def failing(*args, **kwargs):
        raise PermissionError("no")

    monkeypatch.setattr(storage, "list_entries", failing)
    with pytest.raises(CorruptLogError):  # the log cannot be listed
        list_whole_log(storage, str(table))
    assert gc.isenabled()

    monkeypatch.setattr(storage, "list_entries", recorded)
    gc.disable()
    try:
        list_whole_log(storage, str(table))
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen[-1] is False


def test_a_large_listing_goes_to_the_oldest_generation_at_once(tmp_path: Path, monkeypatch) -> None:
    """The objects a large listing leaves are moved to the collector's oldest generation as the
    build ends (no young collection walks them twice afterwards); a small listing's are not; and a
    process that keeps objects frozen keeps them frozen."""
    import gc

    from delta_downgrade.log.read import listing as listing_module

    table = _table(tmp_path, 40)
    storage = LocalStorage(table)

    gc.collect()
    small = list_whole_log(storage, str(table))  # 40 commits: far below the default bound
    assert not in_generation(small, 2)

    monkeypatch.setattr(listing_module, "PROMOTED_AFTER_OBJECTS", 50)
    gc.collect()
    large = list_whole_log(storage, str(table))
    assert in_generation(large, 2)
    # a file's status holds only a string and numbers: such a struct is never tracked by the
    # collector at all (nothing to walk); the dictionary holding them is moved
    assert not any(gc.is_tracked(s) for s in list(large.listed_commits.values())[:3])
    assert in_generation(large._commits, 2)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert _snapshot_of(large) == _snapshot_of(small)

    # The frozen generation is checked by an object of its own, not by its size: other threads
    # (a suite's Spark gateway) free frozen objects of theirs at any time.
    held = [[]]
    gc.collect()
    gc.freeze()
    try:
        kept = list_whole_log(storage, str(table))
        assert gc.get_freeze_count() > 0
        assert not in_generation(held)
        assert not in_generation(kept, 2)
    finally:
        gc.unfreeze()
    assert in_generation(held, 2)  # the check above can see a release
