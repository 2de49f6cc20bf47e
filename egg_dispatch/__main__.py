"""``python -m egg_dispatch``: the same as the ``egg-dispatch`` console script."""

import sys

from egg_dispatch.cli import main

sys.exit(main())
