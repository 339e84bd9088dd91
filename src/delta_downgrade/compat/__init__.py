"""Client compatibility: a catalogue of Delta clients (``clients.toml``, data with a public source
per entry) and the verdicts it gives for a table's protocol - can client X read / write it, which
features block it, and which drops (in what order) would unblock it. Pure Python, no Spark, no
table data read."""

from delta_downgrade.compat.catalogue import (
    UNKNOWN, Catalogue, Client, load_catalogue, packaged_catalogue,
)
from delta_downgrade.compat.verdict import (
    Access, Blocker, ClientVerdict, FeatureDrop, UnblockPlan, Undroppable, Verdict, client_verdict,
    read_verdict, unblock_plan, write_verdict,
)

__all__ = ["UNKNOWN", "Access", "Blocker", "Catalogue", "Client", "ClientVerdict", "FeatureDrop",
           "UnblockPlan", "Undroppable", "Verdict", "client_verdict", "load_catalogue",
           "packaged_catalogue", "read_verdict", "unblock_plan", "write_verdict"]
