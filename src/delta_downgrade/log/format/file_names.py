"""Names of the files in ``_delta_log`` (PROTOCOL.md "File Types", "Checkpoint Naming Scheme").

Pure functions, no I/O. Paths are table-root relative and use ``/``
(``_delta_log/00000000000000000003.json``).

==========================  ==========================================================  ==========
kind                        name (below ``_delta_log/``)                                 version
==========================  ==========================================================  ==========
``commit``                  ``%020d.json``                                               v
``checkpoint`` classic      ``%020d.checkpoint.parquet``                                 v
``checkpoint`` multipart    ``%020d.checkpoint.%010d.%010d.parquet`` (part, numParts)    v
``checkpoint`` v2           ``%020d.checkpoint.<uuid>.json`` / ``.parquet``              v
``crc``                     ``%020d.crc`` ("Version Checksum File")                      v
``compacted``               ``%020d.%020d.compacted.json`` (start, end)                  start
``staged_commit``           ``_staged_commits/%020d.<uuid>.json``                        v
``sidecar``                 ``_sidecars/<name>.parquet``                                 None
``last_checkpoint``         ``_last_checkpoint``                                         None
``unknown``                 anything else (only from :func:`classify`)                   None
==========================  ==========================================================  ==========

Names must match exactly: versions have 20 digits, part numbers 10 (the spec's zero padding).
Anything else - Hadoop checksum files (``.00000000000000000003.json.crc``), temporary files,
unpadded versions - is not a log file: :func:`parse_log_file` returns None for it and readers
must ignore it.
"""

from __future__ import annotations

import re

from msgspec import Struct

LOG_DIR = "_delta_log"
#: The largest table version: versions are longs (PROTOCOL.md "Delta Log Entries": ``n`` is a
#: long, zero-padded to 20 digits). A name of the 20-digit form with a larger number is no file of
#: any table's log; :func:`classify` still reports its number so that readers can name it.
MAX_VERSION = (1 << 63) - 1
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"
STAGED_COMMITS_DIR = f"{LOG_DIR}/_staged_commits"

KINDS = frozenset({"commit", "checkpoint", "crc", "compacted", "staged_commit", "sidecar",
                   "last_checkpoint", "unknown"})

# ASCII digits only (re.ASCII below): "٣" is a digit to Python's \d, not to Delta.
_V = r"(?P<v>\d{20})"
_COMMIT = re.compile(_V + r"\.json", re.ASCII)
_CLASSIC = re.compile(_V + r"\.checkpoint\.parquet", re.ASCII)
_MULTIPART = re.compile(_V + r"\.checkpoint\.(?P<part>\d{10})\.(?P<n>\d{10})\.parquet", re.ASCII)
# Spark reads any dot-free unique string here; writers use a UUID.
_V2 = re.compile(_V + r"\.checkpoint\.(?P<uuid>[^./]+)\.(?P<fmt>json|parquet)", re.ASCII)
_CRC = re.compile(_V + r"\.crc", re.ASCII)
_COMPACTED = re.compile(_V + r"\.(?P<end>\d{20})\.compacted\.json", re.ASCII)
_STAGED = re.compile(_V + r"\.(?P<uuid>[^./]+)\.json", re.ASCII)
_SIDECAR = re.compile(r"(?P<name>[^/]+)\.parquet", re.ASCII)


class LogFile(Struct, frozen=True):
    """One file of the log, recognised from its name.

    ``version`` is the commit version (the start version for ``compacted``), None for files
    without one (``last_checkpoint``, ``sidecar``, ``unknown``). ``part``/``num_parts`` are set for
    multi-part checkpoints, ``end_version`` for compacted files, ``uuid`` for v2 checkpoints and
    staged commits, ``fmt`` ("json" or "parquet") for checkpoints.
    """

    path: str
    version: int | None
    kind: str
    part: int | None = None
    num_parts: int | None = None
    end_version: int | None = None
    uuid: str | None = None
    fmt: str | None = None

    @classmethod
    def commit(cls, path: str, version: int) -> LogFile:
        """``LogFile(path, version, "commit", fmt="json")``: the bulk of a listing."""
        return cls(path, version, "commit", fmt="json")

    @property
    def name(self) -> str:
        """The file name without its directories."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def checkpoint_kind(self) -> str | None:
        """"classic", "multipart" or "v2" for checkpoints, None for other kinds."""
        if self.kind != "checkpoint":
            return None
        if self.uuid is not None:
            return "v2"
        if self.num_parts is not None:
            return "multipart"
        return "classic"

    @property
    def is_checkpoint(self) -> bool:
        return self.kind == "checkpoint"


def _log_relative(name: str) -> str | None:
    """``name`` as a path below ``_delta_log/``; None when it is not inside a log directory.

    Accepts a bare file name, a path relative to the table root or to the log directory
    (``_staged_commits/...``, ``_sidecars/...``), or any longer path containing ``/_delta_log/``.
    """
    name = name.replace("\\", "/")
    marker = f"{LOG_DIR}/"
    if name.startswith(marker):
        return name[len(marker):]
    idx = name.rfind("/" + marker)
    if idx >= 0:
        return name[idx + 1 + len(marker):]
    if "/" not in name:
        return name
    if name.startswith(("_staged_commits/", "_sidecars/")):
        return name
    return None


def classify(name: str) -> LogFile:
    """Recognise a log file; never None (unrecognised names give kind ``unknown``)."""
    if len(name) == 25 and name[20:] == ".json":
        digits = name[:20]
        if digits.isdigit() and digits.isascii():
            # a bare commit file name, the bulk of every listing: what _COMMIT would match
            return LogFile.commit(f"{LOG_DIR}/{name}", int(digits))
    rel = _log_relative(name)
    if rel is None:
        return LogFile(path=name, version=None, kind="unknown")
    path = f"{LOG_DIR}/{rel}"
    if "/" in rel:
        sub, _, base = rel.partition("/")
        if sub == "_staged_commits" and (m := _STAGED.fullmatch(base)):
            return LogFile(path, int(m["v"]), "staged_commit", uuid=m["uuid"], fmt="json")
        if sub == "_sidecars" and _SIDECAR.fullmatch(base):
            return LogFile(path, None, "sidecar", fmt="parquet")
        return LogFile(path, None, "unknown")
    if rel == "_last_checkpoint":
        return LogFile(path, None, "last_checkpoint")
    if m := _COMMIT.fullmatch(rel):
        return LogFile(path, int(m["v"]), "commit", fmt="json")
    if m := _CLASSIC.fullmatch(rel):
        return LogFile(path, int(m["v"]), "checkpoint", fmt="parquet")
    if m := _MULTIPART.fullmatch(rel):
        part, n = int(m["part"]), int(m["n"])
        if 1 <= part <= n:
            return LogFile(path, int(m["v"]), "checkpoint", part=part, num_parts=n, fmt="parquet")
        return LogFile(path, None, "unknown")
    if m := _COMPACTED.fullmatch(rel):
        start, end = int(m["v"]), int(m["end"])
        if start < end:
            return LogFile(path, start, "compacted", end_version=end, fmt="json")
        return LogFile(path, None, "unknown")
    if m := _V2.fullmatch(rel):
        return LogFile(path, int(m["v"]), "checkpoint", uuid=m["uuid"], fmt=m["fmt"])
    if m := _CRC.fullmatch(rel):
        return LogFile(path, int(m["v"]), "crc")
    return LogFile(path, None, "unknown")


def parse_log_file(name: str) -> LogFile | None:
    """The :class:`LogFile` for a name or path, or None when it is not a log file."""
    lf = classify(name)
    return None if lf.kind == "unknown" else lf


# --- formatting -------------------------------------------------------------------------------

def _check_version(version: int) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"a table version is a non-negative int, got {version!r}")
    if version > MAX_VERSION:  # would not fit the 20-digit form readers list by
        raise ValueError(f"a table version is a long (at most {MAX_VERSION}), got {version}")
    return version


def commit_path(version: int) -> str:
    return f"{LOG_DIR}/{_check_version(version):020d}.json"


def classic_checkpoint_path(version: int) -> str:
    return f"{LOG_DIR}/{_check_version(version):020d}.checkpoint.parquet"


def multipart_checkpoint_path(version: int, part: int, num_parts: int) -> str:
    """Part ``part`` (1-based) of ``num_parts``."""
    if not 1 <= part <= num_parts:
        raise ValueError(f"part {part} is not within 1..{num_parts}")
    v = _check_version(version)
    return f"{LOG_DIR}/{v:020d}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def multipart_checkpoint_paths(version: int, num_parts: int) -> list[str]:
    """All part paths of one multi-part checkpoint, part 1 first."""
    return [multipart_checkpoint_path(version, i, num_parts) for i in range(1, num_parts + 1)]


def v2_checkpoint_path(version: int, uuid: str, fmt: str = "json") -> str:
    if fmt not in ("json", "parquet") or not uuid or "." in uuid or "/" in uuid:
        raise ValueError(f"bad v2 checkpoint name parts: uuid={uuid!r} fmt={fmt!r}")
    return f"{LOG_DIR}/{_check_version(version):020d}.checkpoint.{uuid}.{fmt}"


def crc_path(version: int) -> str:
    return f"{LOG_DIR}/{_check_version(version):020d}.crc"


def compacted_path(start: int, end: int) -> str:
    if not _check_version(start) < _check_version(end):
        raise ValueError(f"compaction range must have start < end, got {start}..{end}")
    return f"{LOG_DIR}/{start:020d}.{end:020d}.compacted.json"


def staged_commit_path(version: int, uuid: str) -> str:
    if not uuid or "." in uuid or "/" in uuid:
        raise ValueError(f"bad staged commit uuid {uuid!r}")
    return f"{STAGED_COMMITS_DIR}/{_check_version(version):020d}.{uuid}.json"


def sidecar_name(version: int, part: int, num_parts: int, unique: str) -> str:
    """A sidecar file name for part ``part`` of ``num_parts`` of the V2 checkpoint of ``version``:
    ``%020d.checkpoint.%010d.%010d.<unique>.parquet``, delta-spark's naming. Only ``unique`` (a
    UUID) makes it unique, as PROTOCOL.md "Sidecar Files" requires; the rest tells a reader of
    the directory which checkpoint wrote it."""
    if not 1 <= part <= num_parts:
        raise ValueError(f"part {part} is not within 1..{num_parts}")
    if not unique or "." in unique or "/" in unique:
        raise ValueError(f"bad sidecar unique part {unique!r}")
    return f"{_check_version(version):020d}.checkpoint.{part:010d}.{num_parts:010d}.{unique}.parquet"


def sidecar_path(name: str) -> str:
    """``_delta_log/_sidecars/<name>`` for a sidecar file name (PROTOCOL.md "Sidecar Files").

    A ``sidecar`` action's ``path`` is usually just this name, but may also be a full URI: the
    reader resolves those itself."""
    if not name or "/" in name:
        raise ValueError(f"bad sidecar name {name!r}")
    return f"{SIDECAR_DIR}/{name}"


def listing_prefix(version: int) -> str:
    """Prefix for listing the log from ``version`` on (lexicographic order = version order)."""
    return f"{LOG_DIR}/{_check_version(version):020d}"
