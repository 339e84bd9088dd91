"""Storage behind a table: the interface, the scheme registry and what every implementation
shares (temporary-file names, typed write errors, storage options and their redaction).
Implementations (``local``, ``hadoop``, ``object_store``) are
modules of this package that nothing here imports: :func:`open_storage` loads the one a location
needs through :mod:`delta_downgrade.storage.registry`."""

from delta_downgrade.storage.base import DirEntries, FileStatus, Storage, scheme_of
from delta_downgrade.storage.options import (
    IMPLEMENTATION_KEY, is_secret_key, parse_options, redact, redact_text,
)
from delta_downgrade.storage.registry import SCHEMES, implementation_for, open_storage
from delta_downgrade.storage.temp_files import TEMP_NAME_RE, is_package_temp, temp_name
from delta_downgrade.storage.write_errors import typed_write_error, typed_write_errors

__all__ = [
    "DirEntries", "FileStatus", "IMPLEMENTATION_KEY", "SCHEMES", "Storage", "TEMP_NAME_RE", "implementation_for",
    "is_package_temp", "is_secret_key", "open_storage", "parse_options", "redact", "redact_text",
    "scheme_of", "temp_name", "typed_write_error", "typed_write_errors",
]
