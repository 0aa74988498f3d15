"""``python -m obsmem``: the same as the ``om`` command."""

from obsmem.cli.entry import main

main()
