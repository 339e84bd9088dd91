"""``--storage-option KEY=VALUE`` (repeatable), the one argument every subcommand that opens a
table takes: the credentials and endpoint of the table's store, with the keys deltalake accepts.

Only the argument is declared here (the command modules import only ``argparse``); ``main``
parses the items once (:func:`delta_downgrade.app.storage_options.parse_storage_option_items`)
into ``args.storage_options`` before the command runs, so a malformed item is one
``BadStorageOptionError`` (exit 2) whichever command got it.
"""

from __future__ import annotations

import argparse

#: Where argparse collects the raw items; ``main`` puts the parsed dict in ``storage_options``.
DEST = "storage_option_items"


def add_storage_option_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage-option", action="append", dest=DEST, metavar="KEY=VALUE", default=None,
        help="an option of the table's store, with the keys deltalake takes (AWS_REGION, "
             "AWS_ENDPOINT_URL, AZURE_STORAGE_ACCOUNT_NAME, GOOGLE_SERVICE_ACCOUNT_KEY, ...); "
             "repeatable. Values are never printed. Credentials also come from the standard "
             "environment variables.")
