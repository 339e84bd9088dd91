"""``lowest_requirements`` pins each runtime dependency at its lower bound, and refuses a
dependency without one (``make test-lowest-deps`` runs the unit tier on those pins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_downgrade_tools.lowest_requirements import lowest_pins, main, not_installed

REPO = Path(__file__).resolve().parents[3]


def _pyproject(tmp_path: Path, *dependencies: str) -> Path:
    path = tmp_path / "pyproject.toml"
    lines = ",\n".join(f"    {d!r}" for d in dependencies)
    path.write_text(f'[project]\nname = "x"\ndependencies = [\n{lines}\n]\n', encoding="utf-8")
    return path


def test_each_dependency_is_pinned_at_its_lower_bound_and_markers_are_evaluated(tmp_path):
    path = _pyproject(tmp_path, "pyarrow>=15", "obstore>=0.12,<0.13", "Jinja2 >= 3.1",
                      "tomli>=2; python_version < '3.0'", "tqdm>=4.66; python_version >= '3.0'")
    assert lowest_pins(path) == ["pyarrow==15", "obstore==0.12", "Jinja2==3.1", "tqdm==4.66"]


@pytest.mark.parametrize("dependency", ["pyarrow", "pyarrow<20", "pyarrow==16.0", "pyarrow~=16.0"])
def test_a_dependency_without_a_lower_bound_is_refused(tmp_path, dependency, capsys):
    path = _pyproject(tmp_path, "pydantic>=2.7", dependency)
    with pytest.raises(ValueError, match="one lower bound"):
        lowest_pins(path)
    assert main([str(path)]) == 1
    assert "pyarrow" in capsys.readouterr().err


def test_the_packages_own_dependencies_all_have_one():
    pins = lowest_pins(REPO / "pyproject.toml")
    assert [p.split("==")[0] for p in pins][:3] == ["pyarrow", "pydantic", "pydantic-settings"]
    assert all("==" in p for p in pins)


def test_check_names_each_pin_installed_at_another_version_or_not_at_all(tmp_path, capsys):
    from importlib.metadata import version

    here = version("pyarrow")
    assert not_installed([f"pyarrow=={here}"]) == []
    assert not_installed(["pyarrow==1.0", "no-such-distribution==1"]) == [
        f"pyarrow {here} (pinned 1.0)", "no-such-distribution none (pinned 1)"]
    assert main(["--check", str(_pyproject(tmp_path, "pyarrow>=1.0"))]) == 1
    assert f"pyarrow {here} (pinned 1.0)" in capsys.readouterr().err
    assert main(["--check", str(_pyproject(tmp_path, f"pyarrow>={here}"))]) == 0
    assert capsys.readouterr().out.strip() == f"lowest: pyarrow=={here}"

