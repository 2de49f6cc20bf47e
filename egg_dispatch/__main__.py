"""``python -m egg_dispatch``: the same as the ``egg-dispatch`` console script."""

import sys

from .cli import main

sys.exit(main())
