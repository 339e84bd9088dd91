"""Data-file rewrites on PySpark: deletion-vector purge, column-mapping removal, type widening.

Each is the data rewrite a removable feature names (``features/*``, its ``rewrite``):
``rewrite(run: DropRun) -> bool`` (whether it changed the table). They touch only the affected
files, commit in batches so that a crash never redoes committed work, and keep driver memory
bounded by the number of affected files.
"""

from __future__ import annotations

# Staging areas of the rewrites, named here (no Spark import) so that VACUUM can find what a killed
# rewrite left behind: both live under names VACUUM otherwise never lists (PROTOCOL.md, VACUUM
# skips hidden ``_``/``.`` names), see ``operations.vacuum.is_package_leftover``.
#: Column-mapping removal stages each output here, at the table root, before moving it in place.
STAGING_DIR = "_delta_downgrade_staging"
#: The deletion-vector purge writes each output directory as ``dv-purge-<16 hex>/``; a killed
#: Spark write leaves its ``_temporary/`` (the Hadoop output committer's work area) inside.
PURGE_DIR_PREFIX = "dv-purge-"
