"""The ``delta-downgrade`` command's process after main returns (``run_as_command`` freezes its
objects): what must happen at exit still happens."""

from __future__ import annotations

import os
import subprocess
import sys

# A command whose main leaves, in a reference cycle only the collector would free, a spill of the
# replay (its directory removed by a weakref.finalize), and a line in stdout's buffer (a pipe).
_CHILD = """
from delta_downgrade.app import cli
from delta_downgrade.log.replay.state_parts import PartSpill

def main():
    spill = PartSpill(4)
    spill.cycle = spill
    print(spill.directory)
    del spill
    return 5

cli.main = main
cli.run_as_command()
"""


def test_exit_handlers_and_streams_still_run_after_the_freeze() -> None:
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 5, proc.stderr
    spill_directory = proc.stdout.strip()
    assert os.path.isabs(spill_directory) and not os.path.exists(spill_directory)
