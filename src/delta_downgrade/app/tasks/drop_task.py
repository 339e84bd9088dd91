"""Settings and per-table handlers of ``drop_feature_task`` and ``truncate_task``.

The drop logs its steps (``delta_downgrade.drop``, each record tagged with its table); the task
entry points print them as ``[table] step`` lines on stderr (``app.console_logging``)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator

from delta_downgrade.app.render.result import drop_result
from delta_downgrade.errors import EXIT_OK, BadSettingsError
from delta_downgrade.app.tasks.settings import TaskSettings


class DropFeatureSettings(TaskSettings):
    TASK: ClassVar[str] = "drop_feature_task"

    feature: str | None = None
    truncate_history: bool = False
    dry_run: bool = False

    @field_validator("feature")
    @classmethod
    def _feature(cls, value: str | None) -> str | None:
        return value.strip() if value else value


class TruncateSettings(TaskSettings):
    TASK: ClassVar[str] = "truncate_task"
    FEATURE: ClassVar[str] = "checkpointProtection"

    dry_run: bool = False


def _engine_for(settings: TaskSettings, table: str) -> Any:
    from delta_downgrade.app.engines import select_engine

    return select_engine(settings.engine, table)


def drop_one(settings: TaskSettings, table: str) -> tuple[dict[str, Any], int]:
    assert isinstance(settings, DropFeatureSettings)
    if not settings.feature:
        raise BadSettingsError("drop_feature_task needs --feature=NAME (for example deletionVectors)",
                               table=table)
    engine = _engine_for(settings, table)
    outcome = engine.drop_feature(table, settings.feature, truncate_history=settings.truncate_history,
                                  dry_run=settings.dry_run)
    return drop_result(outcome), EXIT_OK


def truncate_one(settings: TaskSettings, table: str) -> tuple[dict[str, Any], int]:
    assert isinstance(settings, TruncateSettings)
    engine = _engine_for(settings, table)
    outcome = engine.drop_feature(table, "checkpointProtection", truncate_history=True,
                                  dry_run=settings.dry_run)
    return drop_result(outcome), EXIT_OK
