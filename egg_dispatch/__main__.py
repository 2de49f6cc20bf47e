"""``python -m egg_dispatch``: the same as the ``egg-dispatch`` console script."""

from egg_dispatch.cli import console_main

console_main()
