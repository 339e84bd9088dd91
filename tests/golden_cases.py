"""Test cases derived from the golden tables' logs, computed once and kept in a manifest.

Some tests are parametrised by what the golden logs hold (the features each table can drop, the
tables a client cannot read). Computing that reads every log, and pytest computes parameters when
it imports a test module — at every collection, for every xdist worker. ``golden_cases(compute)``
returns ``compute(golden_root)`` from ``.test-records/golden-cases/`` while nothing it depends on
changed: the golden tables' log listings (names, sizes, modification times), the package's sources
(names, sizes, modification times) and ``compute``'s own source. Anything else recomputes it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST_DIR = REPO_ROOT / ".test-records" / "golden-cases"
PACKAGE_DIRS = (REPO_ROOT / "src", REPO_ROOT / "tools" / "src")


def golden_dir() -> Path:
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    return Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "golden"


def _tree_stamp(digest: Any, root: Path, suffixes: tuple[str, ...] | None = None) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if suffixes is not None and not name.endswith(suffixes):
                continue
            st = os.stat(os.path.join(dirpath, name))
            digest.update(f"{os.path.relpath(os.path.join(dirpath, name), root)}\0{st.st_size}\0"
                          f"{st.st_mtime_ns}\n".encode())


def _fingerprint(root: Path, compute: Callable[..., Any]) -> str:
    digest = hashlib.sha256()
    digest.update(str(root.resolve()).encode())
    digest.update(inspect.getsource(compute).encode())
    for table in sorted(p for p in root.iterdir() if p.is_dir()):
        digest.update(table.name.encode())
        log = table / "_delta_log"
        if log.is_dir():
            _tree_stamp(digest, log)
    for package in PACKAGE_DIRS:
        _tree_stamp(digest, package, (".py", ".toml", ".json", ".j2", ".html", ".css"))
    return digest.hexdigest()


def golden_cases(compute: Callable[[Path], list[Any]]) -> list[Any]:
    """``compute(golden_root)`` (JSON-able cases; lists come back as lists), from the manifest when
    it is current; ``[]`` without golden tables (their tests then have no case, as before)."""
    root = golden_dir()
    if not root.is_dir():
        return []
    fingerprint = _fingerprint(root, compute)
    manifest = MANIFEST_DIR / f"{compute.__module__}.{compute.__qualname__}.json"
    try:
        saved = json.loads(manifest.read_text())
        if saved.get("fingerprint") == fingerprint:
            return [tuple(c) if isinstance(c, list) else c for c in saved["cases"]]
    except (OSError, ValueError, KeyError):
        pass
    cases = compute(root)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    partial = manifest.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"fingerprint": fingerprint, "cases": cases}))
    os.replace(partial, manifest)  # xdist workers may write it at once: last one wins, same content
    return cases
