"""The reconciliation of a log segment (PROTOCOL.md "Action Reconciliation") and its executors."""
