"""The parts of the file rewriter that need no Spark job (rewrite/file_rewriter.py)."""

from __future__ import annotations

from delta_downgrade.rewrite.file_rewriter import REWRITE_CONF, in_batches, rewrite_conf


class _Conf:
    def __init__(self, values: dict[str, str], refused: set[str]) -> None:
        self.values = dict(values)
        self.refused = refused

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        if key in self.refused:
            raise RuntimeError("CONFIG_NOT_AVAILABLE")
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class _Session:
    def __init__(self, values: dict[str, str], refused: set[str] = frozenset()) -> None:
        self.conf = _Conf(values, set(refused))


def test_in_batches():
    assert in_batches([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert in_batches([], 3) == []


def test_rewrite_conf_is_restored_and_refusals_are_reported():
    session = _Session({"spark.sql.caseSensitive": "false", "unrelated": "1"},
                       refused={"spark.sql.parquet.mergeSchema"})
    said: list[str] = []
    with rewrite_conf(session, said.append):
        assert session.conf.values["spark.sql.caseSensitive"] == "true"
        assert session.conf.values["spark.sql.files.maxPartitionBytes"] == REWRITE_CONF["spark.sql.files.maxPartitionBytes"]
    assert session.conf.values == {"spark.sql.caseSensitive": "false", "unrelated": "1"}
    assert said == ["could not set spark.sql.parquet.mergeSchema=false (RuntimeError); continuing without it"]
