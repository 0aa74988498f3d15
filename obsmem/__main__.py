"""``python -m obsmem``: the same as the ``om`` command."""

from obsmem.cli.main import main

main()
