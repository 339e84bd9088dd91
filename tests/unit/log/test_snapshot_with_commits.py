"""``Snapshot.with_commits``: a table derived from commits given by value (a plan's, or the winners
of a lost race) is the table the log holds once those commits are written - version, protocol,
metadata, domains, files - and nothing of the derivation touches the snapshot it starts from."""

from __future__ import annotations

import pyarrow as pa

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import AnyAction, DomainMetadata, ProtocolAction, RemoveFile
from delta_downgrade_tools.builders import TableBuilder

SCHEMA = pa.schema([("id", pa.int64())])
DOMAIN = "test.derived"


def _table(tmp_path) -> TableBuilder:
    b = TableBuilder(tmp_path / "t", clock=ManualClock())
    b.create(SCHEMA, rows=[{"id": i} for i in range(6)], files=3)
    return b


def _commits(b: TableBuilder) -> list[list[AnyAction]]:
    read = b.log.snapshot()
    first = sorted(read.state().files.values(), key=lambda a: a.path)[0]
    return [
        [read.metadata.with_configuration({"delta.appendOnly": "false"})],
        [DomainMetadata(DOMAIN, '{"a":1}')],
        [RemoveFile(path=first.path, deletionTimestamp=1, dataChange=True, size=first.size),
         *b.write_files([{"id": 10}])],
        [ProtocolAction.of(Protocol(1, 3)), DomainMetadata(DOMAIN, "", removed=True)],
    ]


def test_the_derived_table_is_the_table_the_log_holds_once_the_commits_are_written(tmp_path):
    b = _table(tmp_path)
    read = b.log.snapshot()
    read_files = read.state().files
    commits = _commits(b)
    derived = read.with_commits(commits)
    for actions in commits:
        b.commit(actions)
    written = DeltaLog(b.path).snapshot()
    assert derived.version == written.version == read.version + len(commits)
    assert derived.protocol == written.protocol == Protocol(1, 3)
    assert derived.metadata == written.metadata
    assert derived.domain(DOMAIN) is None and written.domain(DOMAIN) is None
    assert derived.state().files == written.state().files
    assert len(derived.arrow_state().adds) == len(written.arrow_state().adds) == 3
    # the table it started from is untouched
    assert read.version == written.version - 4 and read.state().files == read_files
    assert "delta.appendOnly" not in read.metadata.configuration


def test_each_step_of_a_chain_is_the_table_at_its_version(tmp_path):
    b = _table(tmp_path)
    read = b.log.snapshot()
    commits = _commits(b)
    chain = read
    for actions in commits[:2]:
        chain = chain.with_commits([actions])
    assert chain.derived_commits == commits[:2] and read.derived_commits == []
    assert chain.domain(DOMAIN) == DomainMetadata(DOMAIN, '{"a":1}')
    assert chain.metadata.configuration["delta.appendOnly"] == "false"
    # no file changed: the Arrow state is the read one's, carried forward
    assert chain.arrow_state().adds is read.arrow_state().adds
    longer = chain.with_commits(commits[2:3])
    assert longer.state().files == read.with_commits(commits[:3]).state().files
    assert len(longer.state().files) == len(read.state().files)  # one removed, one added
    assert chain.with_commits([]) is chain


def test_commit_information_of_given_and_read_versions(tmp_path):
    b = _table(tmp_path)
    read = b.log.snapshot()
    derived = read.with_commits([[]])
    assert derived.commit_info(read.version) == read.commit_info()
    assert derived.commit_info() is None  # a planned commit carries no commitInfo
    assert derived.timestamp_ms() == read.timestamp_ms()
