"""The wheel carries what the compat report and client names need at run time: the Jinja2
templates and the client catalogue as package data, and jinja2 / packaging as dependencies; and its
METADATA matches what its code imports (`make wheel` runs the same check), a check shown to fail
on a METADATA with a dev extra, a test tool and a missing requirement."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.built_wheel import built_wheel  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(built_wheel) -> Path:
    return built_wheel


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


def test_the_wheel_metadata_matches_what_its_code_imports(wheel):
    from delta_downgrade_tools.wheel_metadata import check

    assert check(wheel) == []


def test_the_metadata_check_finds_a_dev_extra_an_unused_and_a_missing_requirement(wheel, tmp_path):
    from delta_downgrade_tools.wheel_metadata import check

    source = zipfile.ZipFile(wheel)
    broken = tmp_path / wheel.name
    with zipfile.ZipFile(broken, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name.endswith(".dist-info/METADATA"):
                text = data.decode()
                text = text.replace("Requires-Dist: tqdm", "Requires-Dist: pyyaml>=6\nRequires-Dist: tqdm", 1)
                text = "\n".join(line for line in text.splitlines() if not line.startswith("Requires-Dist: obstore"))
                text = text.replace("Provides-Extra: local", "Provides-Extra: dev\nRequires-Dist: pytest; extra == 'dev'\n"
                                    "Provides-Extra: local", 1)
                data = text.encode()
            out.writestr(name, data)
    problems = "\n".join(check(broken))
    assert "pyyaml is a development tool" in problems, problems
    assert "pytest is a development tool" in problems, problems
    assert "extra 'dev'" in problems, problems
    assert "obstore (imported by" in problems and "is not a requirement" in problems, problems
