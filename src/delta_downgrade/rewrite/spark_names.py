"""How the rewrites name things to Spark literally: load paths (Hadoop expands glob characters in
them), column names (backticks), and the hidden ``_metadata`` column of a file scan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def escape_glob(path: str) -> str:
    """Spark globs read paths; protect Hadoop glob characters with a backslash."""
    return "".join("\\" + c if c in "\\*?[]{}" else c for c in path)


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def metadata_column(df: "DataFrame") -> Any:
    from pyspark.sql import functions as F

    if hasattr(df, "metadataColumn"):  # works even when the data has a column named _metadata
        return df.metadataColumn("_metadata")
    return F.col("_metadata")  # pragma: no cover - Spark 3.5
