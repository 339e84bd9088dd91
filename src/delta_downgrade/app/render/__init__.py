"""Every renderer of the package: what operations return, as people and programs read it — the
``RESULT`` line of the tasks and the CLI, the text and JSON of ``inspect``, ``cleanup`` and
``vacuum``, the drop summary. Operations return records (structs); only this package formats them."""
