"""``python -m delta_downgrade.app.cli``: the same as the ``delta-downgrade`` command."""

from delta_downgrade.app.cli import run_as_command

run_as_command()
