"""Data-file rewrites on PySpark: deletion-vector purge, column-mapping removal, type widening.

Each is the data rewrite a removable feature names (``features/*``, its ``rewrite``):
``rewrite(run: DropRun) -> bool`` (whether it changed the table). They touch only the affected
files, commit in batches so that a crash never redoes committed work, and keep driver memory
bounded by the number of affected files.
"""

from __future__ import annotations
