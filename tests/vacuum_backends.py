"""VACUUM on each backend: one test case, the same answer on local disk and on S3.

A test builds its table on local disk (TableBuilder, ``_touch`` with a chosen modification time)
and calls :meth:`Backend.vacuum` / :meth:`Backend.files` / :meth:`Backend.exists` with the local
path. The ``local`` backend runs VACUUM there. The ``s3`` backend first brings the bucket up to
date with the local directory (new or changed files uploaded, each object back-dated to the local
modification time: S3 has no API for it, moto's backend is set directly), runs VACUUM on the
bucket through the object-store storage, then runs the very same call on the local directory and
requires the same answer: the same decisions (files to delete, deleted, checksum companions,
staging directories, counts, retention, cutoff) and afterwards the same files, paths relative to
the table. A refusal must be the same error class on both, and leave both untouched.

What differs on purpose: an object store has no directories, so only the local run removes the
empty staging directories of a killed rewrite (``removed_dirs``); the bucket's "directory" is gone
with its last key. S3 (and moto) keep modification times to the second, so cases keep their
files days away from the retention cutoff.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.operations.vacuum import VacuumResult, vacuum

LOG_DIR = "_delta_log"
#: The fields of a VacuumResult that must agree between backends (all but ``table``, the URI,
#: and ``removed_dirs``, local only).
SAME_FIELDS = ("version", "dry_run", "retention_ms", "configured_retention_ms", "delete_before_ms",
               "files_to_delete", "deleted", "checksum_companions", "failed", "staging_dirs",
               "bytes_to_delete", "referenced_count", "kept_count", "recent_unreferenced_count")


def local_files(path: str, *, log: bool = False) -> set[str]:
    """Every file below ``path``, relative, ``/``-separated; ``_delta_log`` only when ``log``."""
    out = set()
    for dirpath, _dirs, names in os.walk(path):
        rel = os.path.relpath(dirpath, path).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if (rel.split("/")[0] == LOG_DIR) != log:
            continue
        out.update(f"{rel}/{n}" if rel else n for n in names)
    return out


class LocalBackend:
    kind = "local"
    has_directories = True

    def vacuum(self, path: str, **kwargs: Any) -> VacuumResult:
        return vacuum(path, **kwargs)

    def files(self, path: str) -> set[str]:
        return local_files(path)

    def log_files(self, path: str) -> set[str]:
        return local_files(path, log=True)

    def exists(self, path: str, rel: str) -> bool:
        return os.path.isfile(os.path.join(path, *rel.split("/")))


@dataclass
class S3Backend:
    """A local table mirrored into an S3 bucket (moto); see the module docstring."""

    endpoint: Any
    kind: str = "s3"
    has_directories: bool = False
    #: local path -> (name on the bucket, {relative path: (size, mtime_ns)} as last uploaded)
    _tables: dict[str, tuple[str, dict[str, tuple[int, int]]]] = field(default_factory=dict)

    def _name(self, path: str) -> str:
        path = os.path.abspath(path)
        if path not in self._tables:
            self._tables[path] = (f"table-{len(self._tables)}", {})
        return self._tables[path][0]

    def location(self, path: str) -> str:
        return self.endpoint.location(self._name(path))

    def sync(self, path: str) -> None:
        """Upload every local file that is new or changed since the last sync, each back-dated to
        its local modification time."""
        import obstore

        name = self._name(path)
        uploaded = self._tables[os.path.abspath(path)][1]
        store = self.endpoint.store(name)
        for rel in sorted(local_files(path) | local_files(path, log=True)):
            stat = os.stat(os.path.join(path, *rel.split("/")))
            if uploaded.get(rel) == (stat.st_size, stat.st_mtime_ns):
                continue
            with open(os.path.join(path, *rel.split("/")), "rb") as fh:
                obstore.put(store, rel, fh.read())
            self.endpoint.extras["backdate"](f"{name}/{rel}", stat.st_mtime_ns // 1_000_000)
            uploaded[rel] = (stat.st_size, stat.st_mtime_ns)

    def _keys(self, path: str) -> set[str]:
        """The bucket's keys of the table, after the local changes of the test are uploaded
        (a file VACUUM deleted is not uploaded again: its local state did not change)."""
        self.sync(path)
        return set(self.endpoint.keys(self._name(path)))

    def files(self, path: str) -> set[str]:
        return {k for k in self._keys(path) if k.split("/")[0] != LOG_DIR}

    def log_files(self, path: str) -> set[str]:
        return {k for k in self._keys(path) if k.split("/")[0] == LOG_DIR}

    def exists(self, path: str, rel: str) -> bool:
        return rel in self._keys(path)

    def vacuum(self, path: str, **kwargs: Any) -> VacuumResult:
        """VACUUM the bucket's copy, then the local table with the same arguments: the same
        answer, the same files left (the refusal: the same error class, nothing deleted)."""
        self.sync(path)
        before = self._keys(path)
        try:
            remote = vacuum(self.location(path), storage_options=self.endpoint.storage_options,
                            **kwargs)
        except DeltaDowngradeError as exc:
            local_before = local_files(path) | local_files(path, log=True)
            with pytest.raises(type(exc)) as local:
                vacuum(path, **kwargs)
            assert local.value.error_class == exc.error_class
            assert self._keys(path) == before, "a refused VACUUM deleted objects"
            assert local_files(path) | local_files(path, log=True) == local_before
            raise
        local = vacuum(path, **kwargs)
        for name in SAME_FIELDS:
            assert getattr(remote, name) == getattr(local, name), name
        assert remote.removed_dirs == [], "an object store has no directories to remove"
        assert self.files(path) == local_files(path), "S3 and local disk kept different files"
        assert self.log_files(path) == local_files(path, log=True), "VACUUM changed the log"
        return remote


#: The backends a VACUUM case runs on (``@pytest.fixture(params=BACKENDS)``).
BACKENDS = ("local", "s3")


def make_backend(request: pytest.FixtureRequest) -> LocalBackend | S3Backend:
    """The backend of a fixture parametrised by :data:`BACKENDS`: local disk, or an S3 bucket
    (moto, skipped when it cannot start) compared with local disk."""
    if request.param == "local":
        return LocalBackend()
    return S3Backend(request.getfixturevalue("s3_endpoint"))
