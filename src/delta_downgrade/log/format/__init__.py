"""The log's formats: file names, the checkpoint schema and its Arrow columns, statistics."""
