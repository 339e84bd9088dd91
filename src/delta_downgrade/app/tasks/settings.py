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

``task_key`` and ``task_values_dir`` say where this task's values go. They come only from the
environment the job runner sets (``DELTA_DOWNGRADE_TASK_KEY``, ``DELTA_DOWNGRADE_TASK_VALUES_DIR``):
because every job parameter reaches every task as ``--key=value``, a job parameter of that name
must not be able to redirect the values file, so the command line and the config file cannot
set them.

Each level is one of pydantic-settings' own sources: the command line through
``CliSettingsSource``, the environment through ``EnvSettingsSource``, the file through
``TomlConfigSettingsSource``; pydantic-settings composes them in that order. Two pieces stay
written here, because the built-in ones accept other inputs than the jobs send:

- ``parse_cli_args`` normalizes argv before ``CliSettingsSource`` (argparse underneath) parses
  it: every option becomes one ``--key=value`` with ``_`` in the key (``--flag`` alone is
  ``--flag=true``, ``--key value`` is ``--key=value``), empty and ``null``/``None`` values are
  dropped, the last of a repeated key is kept, words that are not options and ``--help``/``-h``
  never reach it, and unknown keys are ignored (``cli_ignore_unknown_args``). Fed raw argv, the
  library would refuse either ``--flag`` alone or ``--flag=true`` (implicit flags take no value,
  explicit ones need one), take one spelling of a key only (``cli_kebab_case``), let ``--x=`` (an
  unset upstream task value) beat the environment as an empty string, exit the process on
  ``-h``, join a repeated list option instead of keeping the last, refuse ``--table -x`` and stop
  at ``--``. ``storage_options`` is the one setting that does not go through it but enters as an
  init argument, as before: the library decodes ``--storage_options`` into a dict and merges it
  key by key with the environment's ``DELTA_DOWNGRADE_STORAGE_OPTIONS`` (a key of the environment
  survives a command line that leaves it out, where the command line's JSON object must replace
  it), also takes ``K=V,K2=V2`` and cuts a value (a SAS token) at its commas, and reports bad
  JSON as Python's own unpacking error. (Repeated ``--storage_option`` items still add to the
  environment's object, as they did.)
- ``_TaskTomlSource`` reads the file for the built-in TOML source. The built-in skips a missing
  file silently and reads one table (``toml_table_header``) instead of the task's table over the
  top-level keys; it leaves ``-`` in keys, lets a top-level table pose as a value, and reports a
  file that is not UTF-8 or not TOML as a bare exception.

``storage_options`` (the credentials and endpoint of the tables' store, with the keys deltalake
takes) come from the same sources: a ``[storage_options]`` table of the file (top level, or
``[<task>.storage_options]``, which replaces it), ``DELTA_DOWNGRADE_STORAGE_OPTIONS`` holding a
JSON object, and on the command line ``--storage_options='{"KEY": "VALUE"}'`` and/or repeated
``--storage_option KEY=VALUE`` items (which win over the JSON object's keys). The values are
secrets: they are kept as ``SecretStr`` (``repr``, validation errors and the settings' own
messages never show them) and unwrapped only by :meth:`TaskSettings.storage_option_values`, for
the operations. On Databricks a job passes them from a secret scope (README, "Tables on object
storage"), never inline.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings, CliSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

from delta_downgrade.app.storage_options import parse_storage_option_items
from delta_downgrade.errors import BadConfigError, BadInputError, BadSettingsError, BadStorageOptionError
from delta_downgrade.app.tasks.task_values import check_key

if TYPE_CHECKING:
    from importlib.abc import Traversable

ENV_PREFIX = "DELTA_DOWNGRADE_"

# Settings only the job runner's environment may set (see the module docstring).
RUNNER_ONLY = frozenset({"task_key", "task_values_dir"})

#: Settings whose value is a TOML table (the file's other top-level tables are task sections).
TABLE_SETTINGS = frozenset({"storage_options"})
#: The command-line key of one ``KEY=VALUE`` storage option, repeatable (parse_cli_args keeps
#: every one, in order, instead of the last).
STORAGE_OPTION_ITEM = "storage_option"
REPEATABLE = frozenset({STORAGE_OPTION_ITEM})


def parse_cli_args(argv: Sequence[str]) -> dict[str, Any]:
    """``--key=value`` / ``--key value`` / ``--flag`` → {key: value}; keys use ``_``. A key of
    :data:`REPEATABLE` maps to the list of its values, in order; any other to its last value."""
    out: dict[str, Any] = {}
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
        if key in REPEATABLE:
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
    return out


class _TaskTomlSource(TomlConfigSettingsSource):
    """pydantic-settings' TOML source over the ``--config`` file, read our way (see the module
    docstring): top-level keys, then the task's own table, which wins."""

    def __init__(self, settings_cls: type[BaseSettings], path: str | None, section: str) -> None:
        self.path, self.section = path, section
        self.names = set(settings_cls.model_fields) - RUNNER_ONLY
        if path:
            _regular_file(path, "config file")  # the built-in source skips a missing file
        # Absolute, so that the built-in's `~` expansion cannot turn it into another file.
        super().__init__(settings_cls, toml_file=Path(path).absolute() if path else None)

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        path = self.path or str(file_path)  # the path as given, for the messages
        try:
            data = tomllib.loads(read_text_file(path, "config file"))
        except tomllib.TOMLDecodeError as exc:
            raise BadConfigError(f"config file {path} is not valid TOML: {exc}") from exc
        # The task's own section must be a TOML table: `drop_feature_task = 3` or an array of
        # tables `[[drop_feature_task]]` is a mistake to report, not a value to iterate.
        section_value = data.get(self.section, {})
        if not isinstance(section_value, dict):
            raise BadConfigError(f"config file {path}: [{self.section}] must be a table of settings, "
                                 f"not {_toml_type(section_value)}; write it as [{self.section}] followed "
                                 f"by key = value lines")
        top = {_key(k): v for k, v in data.items() if not isinstance(v, dict) or _key(k) in TABLE_SETTINGS}
        task = {_key(k): v for k, v in section_value.items()}
        ignored = sorted(RUNNER_ONLY & ({**top, **task}.keys()))
        if ignored:
            _warn(f"config file {path}: ignoring {', '.join(ignored)}: only the job runner's "
                  f"environment sets {'them' if len(ignored) > 1 else 'it'}")
        return {k: v for k, v in {**top, **task}.items() if k in self.names}


def _key(name: str) -> str:
    return name.replace("-", "_")


def _toml_type(value: object) -> str:
    if isinstance(value, list):
        return "an array" + (" of tables ([[...]])" if value and all(isinstance(v, dict) for v in value) else "")
    return f"a {type(value).__name__} ({value!r})"


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _regular_file(path: str, what: str) -> Path:
    file = Path(path)
    if not file.is_file():
        raise BadConfigError(f"{what} {path} does not exist (or is not a regular file)")
    return file


def read_text_file(path: str, what: str, *, max_bytes: int | None = None) -> str:
    """The UTF-8 text of a file the settings name, or one :class:`BadConfigError` saying why not
    (missing, unreadable, a directory, not UTF-8, over ``max_bytes``): a user's file is input,
    never a traceback. At most ``max_bytes + 1`` bytes are read, whatever the file claims to be
    (a ``/proc`` file says it is empty, a device never ends)."""
    file = _regular_file(path, what)
    try:
        with file.open("rb") as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except OSError as exc:
        raise BadConfigError(f"{what} {path} cannot be read: {exc.strerror or exc}") from exc
    if max_bytes is not None and len(data) > max_bytes:
        raise BadConfigError(f"{what} {path} is larger than {max_bytes // (1024 * 1024)} MiB; it "
                             f"should hold one table per line: split the fleet into several files")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadConfigError(f"{what} {path} is not UTF-8 text (byte {exc.start}: "
                             f"{data[exc.start:exc.start + 1]!r}); save it as UTF-8") from exc


def _split_list(value: object) -> object:
    """A list setting given as text: a JSON array, or items separated by commas."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json
            return json.loads(text)
        # Each item taken as given (a path may begin or end with a blank); only an item that is
        # blank altogether is left out.
        return [t for t in value.split(",") if t.strip()]
    return value


class TaskSettings(BaseSettings):
    """Settings every task shares."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)
    TASK: ClassVar[str] = "task"
    _config_path: ClassVar[str | None] = None

    table: str | None = None
    tables: list[str] | None = None
    tables_file: str | None = None
    #: A Unity Catalog catalog or schema whose Delta tables join the fleet (app/unity_catalog.py).
    tables_from: str | None = None
    parallelism: int = 4
    engine: str = "auto"
    task_values_dir: str | None = None
    task_key: str | None = None
    config: str | None = None
    #: Credentials and endpoint of the tables' store (deltalake's keys); secret values.
    storage_options: dict[str, SecretStr] = Field(default_factory=dict)

    @field_validator("tables", mode="before")
    @classmethod
    def _split_tables(cls, value: object) -> object:
        return _split_list(value)

    @field_validator("storage_options", mode="before")
    @classmethod
    def _storage_options(cls, value: object) -> dict[str, SecretStr | str]:
        # A JSON object as text (the command line), a table (TOML), a dict (the environment's
        # JSON, decoded by pydantic-settings). No message here quotes a value: it may be a secret.
        if isinstance(value, str):
            value = storage_options_from_json(value)
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a table / JSON object of KEY = \"VALUE\" strings, not "
                             f"{type(value).__name__}")
        out: dict[str, SecretStr | str] = {}
        for key, item in value.items():
            if isinstance(item, SecretStr):
                out[str(key)] = item
            elif isinstance(item, bool):  # TOML `AWS_ALLOW_HTTP = true`: deltalake's "true"
                out[str(key)] = "true" if item else "false"
            elif isinstance(item, (str, int, float)):
                out[str(key)] = str(item)
            else:
                raise ValueError(f"{key} must be a string, not {type(item).__name__}")
        return out

    def storage_option_values(self) -> dict[str, str]:
        """The storage options as the operations take them: the only place they are unwrapped."""
        return {key: value.get_secret_value() for key, value in self.storage_options.items()}

    @field_validator("task_key")
    @classmethod
    def _task_key(cls, value: str | None) -> str | None:
        # The task key names the values file: only what Databricks accepts as a task_key.
        if value is not None:
            try:
                check_key(value)
            except BadInputError as exc:
                raise ValueError(exc.message) from None
        return value

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in ("auto", "native", "delta-sql", "delta_sql"):
            raise ValueError("must be one of auto, native, delta-sql")
        return value.replace("_", "-")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Highest precedence first: (the command line, which pydantic-settings puts before these
        # when load_settings passes its CliSettingsSource,) the environment, the file.
        return (init_settings, env_settings, _TaskTomlSource(settings_cls, cls._config_path, cls.TASK))

    def table_list(self) -> list[str]:
        """Every table this run handles: ``table``, ``tables`` and the lines of ``tables_file``."""
        found: list[str] = []
        if self.table:
            found.append(self.table)
        found.extend(self.tables or [])
        if self.tables_file:
            found.extend(read_tables_file(self.tables_file))
        seen: dict[str, None] = {}
        for t in found:
            seen.setdefault(t, None)
        return list(seen)


def storage_options_from_json(text: str) -> dict[str, object]:
    """A JSON object of storage options; ``ValueError`` saying where the text is wrong, never
    quoting it (it holds secrets)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        where = f" ({exc.msg} at character {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(f"must be a JSON object such as {{\"AWS_REGION\": \"eu-west-1\"}}; "
                         f"this one does not parse{where}") from None
    if not isinstance(value, dict):
        raise ValueError(f"must be a JSON object of \"KEY\": \"VALUE\" pairs, not {type(value).__name__}")
    return value


#: What a tables file may hold: a fleet of tens of thousands of tables fits many times over; a
#: file beyond it is not a list of tables (a device, a log, a data file given by mistake).
MAX_TABLES_FILE_BYTES = 16 * 1024 * 1024
#: The longest line taken as a table (a URI of an object store key is at most ~1 KiB plus its
#: bucket and account).
MAX_TABLE_CHARS = 4096
#: How many refused lines a message lists (by number) before it says "and N more".
_SHOWN_REFUSALS = 5


def read_tables_file(path: str) -> list[str]:
    """The tables of a tables file (:func:`parse_tables_file`), read with a bound on its size."""
    return parse_tables_file(read_text_file(path, "tables file", max_bytes=MAX_TABLES_FILE_BYTES),
                             source=f"tables file {path}")


def table_line_problem(line: str) -> str | None:
    """Why ``line`` of a tables file is not a table, or None. Said without quoting the line: a
    file given by mistake (``/etc/passwd``, ``/proc/self/environ``) must not come back in the
    output. A table is an absolute path, a URI (``scheme://…``), ``delta.`path``` or a catalog
    name; a relative path means nothing on a job's cluster."""
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.errors import DeltaDowngradeError

    if len(line) > MAX_TABLE_CHARS:
        return f"is longer than {MAX_TABLE_CHARS} characters"
    control = next((ch for ch in line if not ch.isprintable() and ch != " "), None)
    if control is not None:
        return f"holds a control character (U+{ord(control):04X})"
    try:
        ref = parse_table_ref(line)
    except DeltaDowngradeError:
        return "is not a table name (catalog.schema.table, parts quoted in backticks where needed)"
    if ref.path is not None and not ("://" in ref.path or ref.path.startswith("/")):
        return "is a relative path; give the table's absolute path or its URI (scheme://...)"
    return None


def parse_tables_file(text: str, *, source: str = "tables file") -> list[str]:
    """One table per line, taken as given: a blank line is skipped and a line whose first
    non-blank character is ``#`` is a comment; any other line is the table, whole and unstripped
    (``#`` is a legal character of a path or a backtick-quoted name, and ``"/x/t "`` is not
    ``/x/t``: cutting or stripping a line would name a different table).

    Every line is checked before any table is used (:func:`table_line_problem`); refused lines
    are one :class:`BadConfigError` naming them by number, never by content."""
    tables: list[str] = []
    refused: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line[:-1] if line.endswith("\r") else line  # a file saved with CRLF line ends
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        problem = table_line_problem(line)
        if problem is not None:
            refused.append(f"line {number} {problem}")
        else:
            tables.append(line)
    if refused:
        more = f"; and {len(refused) - _SHOWN_REFUSALS} more" if len(refused) > _SHOWN_REFUSALS else ""
        raise BadConfigError(f"{source} is not a list of tables: {'; '.join(refused[:_SHOWN_REFUSALS])}{more}. "
                             f"Write one table per line (an absolute path, a URI, delta.`path` or "
                             f"catalog.schema.table); nothing was read or written")
    return tables


class VerifySettings(TaskSettings):
    TASK: ClassVar[str] = "verify_task"

    expect_absent_feature: str | None = None
    expect_min_reader_version: int | None = None
    expect_min_writer_version: int | None = None
    expect_boundary_version: int | None = None
    expect_protected_checkpoints: list[str] | None = None
    #: A directory for the compat report of the tables verified (compat.json, compat.html).
    compat_report: str | None = None

    @field_validator("expect_protected_checkpoints", mode="before")
    @classmethod
    def _split_paths(cls, value: object) -> object:
        return _split_list(value)  # same list syntax as --tables


class DropFeatureSettings(TaskSettings):
    TASK: ClassVar[str] = "drop_feature_task"

    feature: str | None = None
    #: Instead of ``feature``: a client catalogue id or alias whose blocking features are dropped.
    for_client: str | None = None
    truncate_history: bool = False
    dry_run: bool = False
    #: Where a table that waits for its history truncation is recorded (tasks/waiting_records.py).
    waiting_dir: str | None = None

    @field_validator("feature", "for_client")
    @classmethod
    def _feature(cls, value: str | None) -> str | None:
        return value.strip() if value else value


class TruncateSettings(TaskSettings):
    TASK: ClassVar[str] = "truncate_task"
    FEATURE: ClassVar[str] = "checkpointProtection"

    dry_run: bool = False
    #: Without a table: the tables recorded there; a table done is no longer recorded.
    waiting_dir: str | None = None


#: What each setting is, for ``--help`` (the models stay plain: the values are validated there).
FIELD_HELP: dict[str, str] = {
    "table": "the table: a path or URI (s3://, az://, abfss://, gs://, file:, hdfs://, ...)",
    "tables": "several tables: a,b,c or a JSON list",
    "tables_file": "a file naming one table per line",
    "tables_from": "every Delta table of a Unity Catalog catalog or catalog.schema (databricks-sdk; "
                   "auth from DATABRICKS_HOST/DATABRICKS_TOKEN, a profile or the runtime)",
    "parallelism": "how many tables run at once",
    "engine": "auto | native | delta-sql",
    "task_values_dir": "where task values are written when not on Databricks",
    "task_key": "this task's key in the job (its task values)",
    "config": "a TOML file of these settings (a [<task name>] table applies to this task only)",
    "storage_options": "the store's credentials and endpoint as a JSON object (deltalake's keys); "
                       "or repeated --storage_option KEY=VALUE; values are never printed",
    "feature": "the feature to drop (bare, 'quoted' or `backticked`; any case)",
    "for_client": "instead of --feature: drop every feature that keeps this client (a client catalogue "
                  "id, alias, or product and version, e.g. duckdb, deltalake==0.18.2, 'trino 447') from the "
                  "table, in order, in one run; in the job, pass feature= (empty) with it",
    "truncate_history": "drop with TRUNCATE HISTORY (waits for the retention)",
    "dry_run": "print the plan, write nothing",
    "waiting_dir": "a directory (a volume path) of tables waiting for their history truncation: the drop "
                   "records each table that needs it there; the truncate task, given no table, handles "
                   "the tables recorded there and removes each one done",
    "expect_absent_feature": "check that this feature is gone from the protocol",
    "expect_min_reader_version": "check the protocol's reader version",
    "expect_min_writer_version": "check the protocol's writer version",
    "expect_boundary_version": "check the checkpoint-protection boundary",
    "expect_protected_checkpoints": "check that these checkpoint files exist (a,b or a JSON list)",
    "compat_report": "also write the client compatibility report of the tables verified into this "
                     "directory: compat.json and compat.html (which tables block which clients)",
}


def task_help(cls: type[TaskSettings]) -> str:
    """``<task> --help``: every setting with its type and default, and where settings come from."""
    lines = [f"usage: {cls.TASK} --table=TABLE [--NAME=VALUE ...]", "",
             "Settings (command line --NAME=VALUE; environment "
             f"{ENV_PREFIX}<NAME>; or the TOML file of --config):"]
    for name, field in cls.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = "" if default in (None, {}, []) else f" (default {default})"
        kind: str | None = str(field.annotation).replace("typing.", "").replace(" | None", "")
        if kind is not None and kind.startswith("<class"):
            kind = getattr(field.annotation, "__name__", None)
        lines.append(f"  --{name}=<{kind}>{shown}")
        if name in FIELD_HELP:
            lines.append(f"      {FIELD_HELP[name]}")
    lines += ["", "Prints one RESULT line per table; exit 0 done or waiting for a retention (status waiting,",
              "truncate_after), 2 bad input, 4 conflict, 1 else."]
    return "\n".join(lines)


def load_settings(cls: type[TaskSettings], argv: Sequence[str]) -> TaskSettings:
    """Build ``cls`` from argv, env and the config file; any problem is one BadInputError."""
    cli = parse_cli_args(argv)
    config = cli.get("config") or os.environ.get(f"{ENV_PREFIX}CONFIG")
    names = set(cls.model_fields) - RUNNER_ONLY
    ignored = sorted(RUNNER_ONLY & cli.keys())
    if ignored:
        # Most likely a job parameter of that name, pushed down to every task.
        _warn(f"ignoring {', '.join('--' + k for k in ignored)}: only the job runner's environment "
              f"({', '.join(ENV_PREFIX + k.upper() for k in ignored)}) sets "
              f"{'them' if len(ignored) > 1 else 'it'}; rename the job parameter")
    known = {k: v for k, v in cli.items() if k in names}
    items = cli.get(STORAGE_OPTION_ITEM)
    if items:
        # Repeated --storage_option KEY=VALUE, over the keys of a --storage_options JSON object.
        try:
            given = storage_options_from_json(known.get("storage_options", ""))
        except ValueError as exc:
            raise BadStorageOptionError(f"invalid settings for {cls.TASK}: --storage_options {exc}") from None
        known["storage_options"] = {**given, **parse_storage_option_items(items, "--storage_option")}
    # Init arguments, not the command-line source (see the module docstring).
    init = {key: known.pop(key) for key in TABLE_SETTINGS if key in known}
    cls._config_path = config
    try:
        cli_source: CliSettingsSource[Any] = CliSettingsSource(cls, cli_parse_args=[f"--{k}={v}" for k, v in known.items()],
                                       cli_ignore_unknown_args=True, cli_exit_on_error=False,
                                       cli_implicit_flags=False)
        # an init argument of BaseSettings that pydantic's generated signature does not show
        return cls(_cli_settings_source=cli_source, **init)  # type: ignore[call-arg]
    except ValidationError as exc:
        problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors())
        # Storage options get their own error class; ``e['input']`` is never shown (a secret).
        error = (BadStorageOptionError if any(e["loc"][:1] == ("storage_options",) for e in exc.errors())
                 else BadSettingsError)
        raise error(f"invalid settings for {cls.TASK}: {problems}") from None
    except SettingsError as exc:
        # A source could not decode a value (the environment's JSON of a table-valued setting);
        # the cause names the field, never the value.
        if "storage_options" in str(exc):
            raise BadStorageOptionError(f"invalid settings for {cls.TASK}: {ENV_PREFIX}STORAGE_OPTIONS "
                                        f"must hold a JSON object such as {{\"AWS_REGION\": \"eu-west-1\"}} "
                                        f"({exc})") from None
        # The command-line source's "Parsing error encountered for tables: ..." as "--tables: ...".
        message = re.sub(r"^Parsing error encountered for (\w+): ", r"--\1: ", str(exc))
        raise BadSettingsError(f"invalid settings for {cls.TASK}: {message}") from None
    finally:
        cls._config_path = None


def _where(loc: Sequence[str | int]) -> str:
    name = ".".join(str(p) for p in loc)
    return f"{ENV_PREFIX}{name.upper()}" if loc and loc[0] in RUNNER_ONLY else f"--{name}"
