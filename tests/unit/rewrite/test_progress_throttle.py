"""A per-file rewrite (column mapping, type widening) tells its progress at the last file, at each
further tenth of the files, and otherwise at most every interval: not one line per file."""

from __future__ import annotations

from delta_downgrade.rewrite.file_rewriter import ProgressThrottle


def test_a_thousand_quick_files_tell_ten_times():
    now = [0.0]
    throttle = ProgressThrottle(1000, interval_s=10.0, clock=lambda: now[0])
    told = []
    for done in range(1, 1001):
        now[0] += 0.001
        if throttle.due(done):
            told.append(done)
    assert told == [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]


def test_slow_files_tell_at_the_interval_between_tenths():
    now = [0.0]
    throttle = ProgressThrottle(1000, interval_s=10.0, clock=lambda: now[0])
    told = []
    for done in range(1, 60):
        now[0] += 4.0  # a slow rewrite: a line every 10 s, not every file
        if throttle.due(done):
            told.append(done)
    assert told == [3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 51, 54, 57]


def test_few_files_tell_every_file():
    throttle = ProgressThrottle(3, interval_s=10.0, clock=lambda: 0.0)
    assert [throttle.due(d) for d in (1, 2, 3)] == [True, True, True]
