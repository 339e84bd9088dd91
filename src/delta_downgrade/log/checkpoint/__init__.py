"""Every way a checkpoint is written (PROTOCOL.md "Checkpoints"): the engine choice is the entry point."""
