"""``--help`` on every task script: the usage and every setting of its settings class, exit 0,
and nothing run (no table needed, no RESULT line)."""

from __future__ import annotations

import pytest

from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task, verify_task
from delta_downgrade.app.tasks.settings import (
    DropFeatureSettings, TruncateSettings, VerifySettings,
)


@pytest.mark.parametrize("entry, settings", [(drop_feature_task, DropFeatureSettings),
                                             (verify_task, VerifySettings),
                                             (truncate_task, TruncateSettings)])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_setting_and_runs_nothing(entry, settings, flag, capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", [settings.TASK, flag])
    assert entry() == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"usage: {settings.TASK} --table=TABLE")
    for name in settings.model_fields:
        assert f"  --{name}=<" in out
    assert "RESULT {" not in out and not err
