"""Where the rewrites put their output, named here (no Spark import) so that VACUUM can find what
a killed rewrite left behind: only names VACUUM otherwise never lists (PROTOCOL.md, VACUUM skips
hidden ``_``/``.`` names), see ``operations.vacuum.is_package_leftover``.
"""

from __future__ import annotations

import re
import uuid

#: Where column-mapping removal and type widening staged each output before they wrote straight
#: into :data:`REWRITE_DIR_PREFIX` directories; a run of an older version may have left it.
STAGING_DIR = "_delta_downgrade_staging"
#: The deletion-vector purge writes each output directory as ``dv-purge-<16 hex>/``; a killed
#: Spark write leaves its ``_temporary/`` (the Hadoop output committer's work area) inside.
PURGE_DIR_PREFIX = "dv-purge-"
#: Column-mapping removal and type widening write each output file into its own fresh directory
#: ``rewrite-<16 hex>/`` next to its input (an object store has no rename: nothing is moved); a
#: killed Spark write leaves its ``_temporary/`` inside, as for the purge.
REWRITE_DIR_PREFIX = "rewrite-"
#: The name of any output directory of a rewrite (purge or file rewrite).
OUTPUT_DIR_RE = re.compile("(?:" + re.escape(PURGE_DIR_PREFIX) + "|" + re.escape(REWRITE_DIR_PREFIX)
                           + r")[0-9a-f]{16}$")


def new_rewrite_dir_name() -> str:
    return REWRITE_DIR_PREFIX + uuid.uuid4().hex[:16]


def is_output_dir_name(name: str) -> bool:
    """Whether ``name`` is an output directory of a rewrite (where a killed Spark write leaves
    ``_temporary/``)."""
    return OUTPUT_DIR_RE.match(name) is not None
