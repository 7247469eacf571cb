"""``python -m seer.check``: the same as ``seer check``."""

import sys

from seer.check.cli import main

sys.exit(main())
