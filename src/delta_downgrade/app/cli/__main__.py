"""``python -m delta_downgrade.app.cli``: the same as the ``delta-downgrade`` command."""

import sys

from delta_downgrade.app.cli import main

sys.exit(main())
