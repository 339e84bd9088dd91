"""How the rewrites read and write through Spark: load paths and column names taken literally,
the hidden ``_metadata`` column of a file scan, and the Parquet writer they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, DataFrameWriter

_GLOB_CHARACTERS = "\\*?[]{}"


def escape_glob(path: str) -> str:
    """Hadoop expands glob characters in load paths; protect each with a backslash so that a path
    is read literally."""
    return "".join("\\" + c if c in _GLOB_CHARACTERS else c for c in path)


def quote_name(name: str) -> str:
    """A column name for ``F.col``: backticks, doubled inside, so dots and spaces are literal."""
    return "`" + name.replace("`", "``") + "`"


def metadata_column(df: "DataFrame") -> "Column":
    """The ``_metadata`` struct of a file scan (``file_path``, ``file_name``, ``file_size``,
    ``file_modification_time``, ``row_index``)."""
    from pyspark.sql import functions as F

    if hasattr(df, "metadataColumn"):  # works even when the data has a column named _metadata
        return df.metadataColumn("_metadata")
    return F.col("_metadata")  # pragma: no cover - Spark 3.5


def parquet_writer(df: "DataFrame", compression: str) -> "DataFrameWriter":
    """A writer of ``df`` as Parquet into a directory that must not exist yet, without the
    ``_SUCCESS`` marker: no Delta reader needs it, and VACUUM never removes it (it skips hidden
    names)."""
    # "error" (ErrorIfExists): the Spark Connect client knows no "errorifexists" alias.
    return (df.write.mode("error")
            .option("compression", compression)
            .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"))
