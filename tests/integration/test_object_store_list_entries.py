"""``ObjectStoreStorage.list_entries`` against real endpoints (moto's S3 server, Azurite,
fake-gcs-server): the files as ``list_dir`` gives them and the "subdirectories" (common key
prefixes), whole and from ``start_after``. The objects are uploaded with obstore directly
(``Endpoint.upload``), never with the code under test."""

from __future__ import annotations

from pathlib import Path

from delta_downgrade.storage import DirEntries, open_storage

LOG = "_delta_log"


def test_list_entries_gives_the_files_and_the_subdirectories(object_store, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    files = {f"{LOG}/{v:020d}.json": b'{"commitInfo":{}}\n' for v in range(3)}
    files.update({f"{LOG}/_last_checkpoint": b'{"version":1}', f"{LOG}/_sidecars/a.parquet": b"s",
                  f"{LOG}/{5:020d}.json/x": b"a key below a commit's name", "part-0.parquet": b"p"})
    for rel, data in files.items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_bytes(data)
    storage = open_storage(object_store.upload(seed, "tbl"), options=object_store.storage_options)

    whole = storage.list_entries(LOG)
    assert whole.files == storage.list_dir(LOG)
    assert [s.path for s in whole.files] == sorted(
        [*(f"{LOG}/{v:020d}.json" for v in range(3)), f"{LOG}/_last_checkpoint"])
    assert whole.others == {"_sidecars", f"{5:020d}.json"}
    tail = storage.list_entries(LOG, start_after=f"{1:020d}.json")
    assert tail.files == storage.list_dir(LOG, start_after=f"{1:020d}.json")
    assert [s.path for s in tail.files] == [f"{LOG}/{2:020d}.json", f"{LOG}/_last_checkpoint"]
    assert tail.others == {"_sidecars", f"{5:020d}.json"}
    assert storage.list_entries(LOG, start_after="_sidecars") == DirEntries([], frozenset())
    assert storage.list_entries("nope") == DirEntries([], frozenset())
