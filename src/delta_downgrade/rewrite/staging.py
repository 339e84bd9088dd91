"""Where the rewrites put their work in progress, named here (no Spark import) so that VACUUM can
find what a killed rewrite left behind: both leave only names VACUUM otherwise never lists
(PROTOCOL.md, VACUUM skips hidden ``_``/``.`` names), see ``operations.vacuum.is_package_leftover``.
"""

from __future__ import annotations

#: Column-mapping removal and type widening stage each output here, at the table root, before
#: moving it in place.
STAGING_DIR = "_delta_downgrade_staging"
#: The deletion-vector purge writes each output directory as ``dv-purge-<16 hex>/``; a killed
#: Spark write leaves its ``_temporary/`` (the Hadoop output committer's work area) inside.
PURGE_DIR_PREFIX = "dv-purge-"
