"""The wheel carries what the compat report and client names need at run time: the Jinja2
templates and the client catalogue as package data, and jinja2 / packaging as dependencies."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("delta_downgrade-*.whl"))


def test_wheel_ships_the_report_templates_and_the_catalogue(wheel):
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    templates = REPO / "src" / "delta_downgrade" / "app" / "render" / "templates"
    for template in sorted(templates.glob("*.j2")):
        assert f"delta_downgrade/app/render/templates/{template.name}" in names
    assert "delta_downgrade/compat/clients.toml" in names
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip().lower() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")]
    assert any(r.startswith("jinja2") and "extra ==" not in r for r in requires), requires
    assert any(r.startswith("packaging") and "extra ==" not in r for r in requires), requires
