"""The local task-values store creates every file exclusively under a random name, observed through
audit events in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path



def test_12_temp_file_is_created_exclusively_with_a_random_name(tmp_path):
    """Every file the values store opens for writing is created with O_CREAT|O_EXCL (no file or
    symlink at that name may pre-exist) under a name not known in advance. Observed through the
    interpreter's audit events in a child process, so no code is replaced."""
    script = textwrap.dedent(f"""
        import json, os, sys
        run_dir = {str(tmp_path)!r}
        opened = []
        def hook(event, args):
            if event == "open" and args[0] is not None and str(args[0]).startswith(run_dir):
                opened.append((str(args[0]), args[1], args[2]))
        sys.addaudithook(hook)
        from delta_downgrade.app.tasks.task_values import LocalTaskValues
        for i in range(2):
            LocalTaskValues(run_dir, "drop_feature").set("status", "dropped")
        print(json.dumps(opened))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    opened = json.loads(proc.stdout.splitlines()[-1])
    writes = [(path, flags) for path, mode, flags in opened
              if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
              or isinstance(mode, str) and any(c in mode for c in "wax+")]
    assert len(writes) >= 2, opened
    for path, flags in writes:
        assert isinstance(flags, int) and flags & os.O_CREAT and flags & os.O_EXCL, (path, flags)
    names = {Path(path).name for path, _ in writes}
    assert len(names) == len(writes)  # a fresh name each time
    assert not any(n in ("drop_feature.tmp", "drop_feature.json.tmp") for n in names)
    assert sorted(p.name for p in (tmp_path / "task_values").iterdir()) == ["drop_feature.json"]
