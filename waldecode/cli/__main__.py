"""``python -m waldecode.cli``: the ``waldecode`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
