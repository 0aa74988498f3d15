"""``om ui``: serve the local web viewer (an adapter over ``obsmem.ui.server.serve``)."""

from __future__ import annotations

import click

from obsmem.cli.main import App, cli
from obsmem.ui.server import DEFAULT_PORT

pass_app = click.make_pass_decorator(App)


@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port on 127.0.0.1 (0: any free one).")  # fmt: skip
@click.option("--no-open", is_flag=True, help="Do not open a browser; only print the URL.")
@pass_app
def ui(app: App, port: int, no_open: bool) -> None:
    """Serve a local web viewer of memory on 127.0.0.1: timeline, search, entries, reflections,
    the vault, the next session's context and status, with forget and corrections.

    Prints a URL holding a fresh token for this run; only a browser that opened it gets in.
    Needs the ui extra: pip install 'obsmem[ui]'. Ctrl-C stops it.
    """
    from obsmem.ui import require

    require()
    from obsmem.ui.server import serve

    serve(app.store, app.settings, port=port, open_browser=not no_open, echo=click.echo)
