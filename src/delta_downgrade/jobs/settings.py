"""Typed settings of the three tasks (pydantic-settings).

Sources, highest precedence first:
1. command-line ``--key=value`` arguments (the form Databricks ``named_parameters`` sends;
   ``--key value`` and ``--flag`` alone also work; ``-`` and ``_`` are interchangeable in keys);
2. environment variables ``DELTA_DOWNGRADE_<KEY>``;
3. the TOML file named by ``--config=PATH`` (or ``DELTA_DOWNGRADE_CONFIG``), top-level keys or a
   ``[<task>]`` table, the task table winning over top-level keys;
4. the defaults below.

Unknown keys are ignored: Databricks pushes every job parameter down to every task. An empty
value (``--x=``, what an unset task value resolves to) counts as "not given".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, ClassVar, Sequence

from pydantic import ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from delta_downgrade.errors import BadInputError

ENV_PREFIX = "DELTA_DOWNGRADE_"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None


def parse_cli_args(argv: Sequence[str]) -> dict[str, str]:
    """``--key=value`` / ``--key value`` / ``--flag`` → {key: value}; keys use ``_``."""
    out: dict[str, str] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("--") or arg == "--":
            continue  # positional words are not ours (spark-submit may pass some)
        body = arg[2:]
        if "=" in body:
            key, value = body.split("=", 1)  # split on the first '=' only
        elif i < len(args) and not args[i].startswith("--"):
            key, value = body, args[i]
            i += 1
        else:
            key, value = body, "true"
        key = key.strip().replace("-", "_").lower()
        if value.strip() in ("", "null", "None"):
            # An unset upstream task value arrives empty or as JSON null: "not given".
            continue
        out[key] = value
    return out


class _TomlSource(PydanticBaseSettingsSource):
    """Values from the ``--config`` TOML file (top-level keys, then the task's own table)."""

    def __init__(self, settings_cls: type[BaseSettings], path: str | None, section: str) -> None:
        super().__init__(settings_cls)
        self.values: dict[str, Any] = {}
        if not path:
            return
        if tomllib is None:
            raise BadInputError("--config needs Python 3.11+ (tomllib)")
        file = Path(path)
        if not file.is_file():
            raise BadInputError(f"config file {path} does not exist", error_class="DELTA_DOWNGRADE_BAD_CONFIG")
        try:
            data = tomllib.loads(file.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BadInputError(f"config file {path} is not valid TOML: {exc}",
                                error_class="DELTA_DOWNGRADE_BAD_CONFIG") from exc
        top = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
        task = {k.replace("-", "_"): v for k, v in (data.get(section) or {}).items()}
        names = set(settings_cls.model_fields)
        self.values = {k: v for k, v in {**top, **task}.items() if k in names}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class TaskSettings(BaseSettings):
    """Settings every task shares."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)
    TASK: ClassVar[str] = "task"
    _config_path: ClassVar[str | None] = None

    table: str | None = None
    tables: list[str] | None = None
    tables_file: str | None = None
    parallelism: int = 4
    engine: str = "auto"
    task_values_dir: str | None = None
    task_key: str | None = None
    config: str | None = None

    @field_validator("tables", mode="before")
    @classmethod
    def _split_tables(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json
                return json.loads(text)
            return [t.strip() for t in text.split(",") if t.strip()]
        return value

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in ("auto", "native", "delta-sql", "delta_sql"):
            raise ValueError("must be one of auto, native, delta-sql")
        return value.replace("_", "-")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: Any,
                                   env_settings: Any, dotenv_settings: Any,
                                   file_secret_settings: Any) -> tuple[Any, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls, cls._config_path, cls.TASK))

    def table_list(self) -> list[str]:
        """Every table this run handles: ``table``, ``tables`` and the lines of ``tables_file``."""
        found: list[str] = []
        if self.table:
            found.append(self.table)
        found.extend(self.tables or [])
        if self.tables_file:
            path = Path(self.tables_file)
            if not path.is_file():
                raise BadInputError(f"tables file {self.tables_file} does not exist",
                                    error_class="DELTA_DOWNGRADE_BAD_CONFIG")
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    found.append(line)
        seen: dict[str, None] = {}
        for t in found:
            seen.setdefault(t, None)
        return list(seen)


class VerifySettings(TaskSettings):
    TASK: ClassVar[str] = "verify_task"

    expect_absent_feature: str | None = None
    expect_min_reader_version: int | None = None
    expect_min_writer_version: int | None = None
    expect_boundary_version: int | None = None
    expect_protected_checkpoints: list[str] | None = None

    @field_validator("expect_protected_checkpoints", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        return TaskSettings._split_tables.__func__(cls, value)  # same list syntax as --tables


def load_settings(cls: type[TaskSettings], argv: Sequence[str]) -> TaskSettings:
    """Build ``cls`` from argv, env and the config file; any problem is one BadInputError."""
    cli = parse_cli_args(argv)
    config = cli.get("config") or os.environ.get(f"{ENV_PREFIX}CONFIG")
    names = set(cls.model_fields)
    known = {k: v for k, v in cli.items() if k in names}
    cls._config_path = config
    try:
        return cls(**known)
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise BadInputError(f"invalid settings for {cls.TASK}: {problems}",
                            error_class="DELTA_DOWNGRADE_BAD_SETTINGS") from None
    finally:
        cls._config_path = None
