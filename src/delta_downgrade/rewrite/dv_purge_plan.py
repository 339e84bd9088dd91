"""What the deletion-vector purge rewrites (rewrite/dv_purge.py): the live files that carry a DV,
in batches, grouped by output directory.
"""

from __future__ import annotations

import posixpath
import uuid
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import unquote

from msgspec import Struct, field
from delta_downgrade.protocol.actions import AddFile, DeletionVectorDescriptor
from delta_downgrade.protocol.dv_paths import is_absolute_log_path
from delta_downgrade.rewrite.actions import log_path
from delta_downgrade.rewrite.data_files import DataFiles
from delta_downgrade.rewrite.spark_io import escape_glob
from delta_downgrade.rewrite.staging import PURGE_DIR_PREFIX

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.log.snapshot import Snapshot

DEFAULT_BATCH_FILES = 256
DEFAULT_BATCH_BYTES = 1 << 30


class PurgeFile(Struct, frozen=True):
    """One live data file with a DV, and where its rewrite goes."""

    add: AddFile
    dv: DeletionVectorDescriptor
    spark_path: str            # what Spark reads: storage.uri of the file (decoded: Hadoop quotes
                               # it), glob characters escaped
    out_dir: str               # log-encoded table-relative directory of the rewrite ("" = root)
    num_records: int | None

    @property
    def cardinality(self) -> int:
        return self.dv.cardinality

    @property
    def fully_deleted(self) -> bool:
        return self.num_records is not None and self.cardinality >= self.num_records

    @property
    def file_name(self) -> str:
        """The decoded file name: unique within the file's directory."""
        return posixpath.basename(unquote(self.add.path))

    @property
    def group_key(self) -> tuple[str, str, tuple[tuple[str, str | None], ...]]:
        """Files rewritten together: one source directory, one output directory, one set of
        partition values."""
        source_dir = posixpath.dirname(unquote(self.add.path))
        return self.out_dir, source_dir, tuple(sorted((self.add.partitionValues or {}).items()))


def _plan_file(files: DataFiles, add: AddFile) -> PurgeFile:
    dv = add.dv
    assert dv is not None
    relative = files.relative(add.path)
    # The directory as the log spells it (an absolute path inside the table re-encoded); a file
    # outside the table (a shallow clone's source) is rewritten into the table root.
    encoded_rel = (add.path if not is_absolute_log_path(add.path) else log_path(relative)) \
        if relative is not None else None
    out_dir = posixpath.dirname(encoded_rel) if encoded_rel is not None else ""
    return PurgeFile(add=add, dv=dv, spark_path=escape_glob(files.spark_location(add.path)), out_dir=out_dir,
                     num_records=add.num_records)


def files_to_purge(snapshot: "Snapshot", files: DataFiles | None = None) -> list[PurgeFile]:
    """Live files that carry a DV, in a stable order that keeps output directories together.
    Spark reads each at its location on the table's storage (``storage.uri``)."""
    files = files or DataFiles(snapshot.storage)
    planned = [_plan_file(files, f) for f in snapshot.state().files.values() if f.dv is not None]
    planned.sort(key=lambda p: (p.group_key, p.add.path))
    return planned


def plan_batches(files: Sequence[PurgeFile], *, batch_files: int = DEFAULT_BATCH_FILES,
                 batch_bytes: int = DEFAULT_BATCH_BYTES) -> list[list[PurgeFile]]:
    """Consecutive batches of at most ``batch_files`` files and ``batch_bytes`` bytes (a single
    larger file forms its own batch). File counts are balanced: 72 files with a limit of 64 make
    two batches of 36, not 64 + 8."""
    if batch_files < 1 or batch_bytes < 1:
        raise ValueError("batch_files and batch_bytes must be positive")
    if files:
        batch_files = -(-len(files) // -(-len(files) // batch_files))
    batches: list[list[PurgeFile]] = []
    current: list[PurgeFile] = []
    size = 0
    for f in files:
        if current and (len(current) >= batch_files or size + f.add.size > batch_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(f)
        size += f.add.size
    if current:
        batches.append(current)
    return batches


def new_dir_name() -> str:
    return PURGE_DIR_PREFIX + uuid.uuid4().hex[:16]


class PurgeGroup(Struct):
    """Input files of a batch sharing an output directory and partition values."""

    files: list[tuple[int, PurgeFile]]
    out_dir: str
    partition_values: dict[str, str | None]
    dir_name: str = field(default_factory=lambda: new_dir_name())

    @property
    def out_rel(self) -> str:
        """Log-encoded table-relative directory of the rewritten files."""
        return f"{self.out_dir}/{self.dir_name}" if self.out_dir else self.dir_name

    @property
    def rewritten(self) -> list[tuple[int, PurgeFile]]:
        return [(i, f) for i, f in self.files if not f.fully_deleted and f.cardinality > 0]

    @property
    def expected_rows(self) -> int | None:
        total = 0
        for _i, f in self.rewritten:
            if f.num_records is None:
                return None
            total += f.num_records - f.cardinality
        return total


def group_batch(batch: Sequence[PurgeFile]) -> list[PurgeGroup]:
    groups: dict[Any, PurgeGroup] = {}
    for i, f in enumerate(batch):
        g = groups.get(f.group_key)
        if g is None:
            g = groups[f.group_key] = PurgeGroup([], f.out_dir, dict(f.add.partitionValues or {}))
        g.files.append((i, f))
    return list(groups.values())
