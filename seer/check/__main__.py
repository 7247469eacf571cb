"""``python -m seer.check``: the same as ``seer check``."""

import sys

from seer.check.cli import main

if __name__ == "__main__":
    sys.exit(main())
