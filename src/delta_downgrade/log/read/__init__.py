"""Reading the log: its listing, segments, commit and checkpoint readers, the protocol history."""
