"""``touchstone ui``: serve the browser dashboard over a run store on this machine."""

from __future__ import annotations

import ipaddress
from typing import Any

import typer

from touchstone.cli.common import STORE_HELP, err, fail_input, open_run_store, out

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ui_command(
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    host: str = typer.Option(
        "127.0.0.1", "--host",
        help="Address to listen on. The dashboard has no login: keep the default (this machine only) "
        "unless every machine that can reach the address may read the runs.",
    ),
    port: int = typer.Option(8765, "--port", help="Port to listen on (1-65535; 0 picks a free one)."),
    open_browser: bool = typer.Option(
        False, "--open/--no-open", help="Open the dashboard in the default web browser once it is up."
    ),
) -> None:
    """Serve the dashboard: runs, a run's rows and score distributions, comparisons of two runs, and a
    metric's trend across runs. Stop it with Ctrl+C."""
    if not 0 <= port <= 65535:
        raise fail_input(f"--port must be between 0 and 65535, got {port}")
    from touchstone.ui import MissingUIDependency, require_ui_packages

    try:
        require_ui_packages()
    except MissingUIDependency as exc:
        raise fail_input(f"{exc}") from None
    import uvicorn

    from touchstone.ui import create_app

    run_store = open_run_store(store)
    app = create_app(run_store)
    if not is_loopback(host):
        err.print(f"[yellow]warning:[/] listening on {host}: anyone who can reach it can read every run "
                  "(the dashboard has no login)", highlight=False, markup=True, soft_wrap=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    _announce_when_up(server, host, port, str(run_store.path), open_browser)
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl+C once it has shut down: stopping is the normal end
        out.print("dashboard stopped", highlight=False, markup=False)
    finally:
        run_store.close()


def bound_port(server: object, default: int) -> int:
    """The port a started uvicorn server listens on (``--port 0`` lets the system choose)."""
    for srv in getattr(server, "servers", None) or []:
        for sock in getattr(srv, "sockets", None) or []:
            return int(sock.getsockname()[1])
    return default


def _opened(browser: Any, url: str) -> bool:
    """Whether a browser was started on ``url`` (False when none is found, or it fails to start)."""
    try:
        return bool(browser.open(url))
    except Exception:  # webbrowser raises webbrowser.Error, or OSError from a broken $BROWSER
        return False


def _announce_when_up(server: object, host: str, port: int, where: str, open_browser: bool) -> None:
    """Once the server listens (a helper thread waits for it): print its address and, when asked,
    open it in the default browser."""
    import threading
    import time
    import webbrowser

    def wait() -> None:
        for _ in range(600):
            if getattr(server, "started", False):
                shown = f"[{host}]" if ":" in host else host
                url = f"http://{shown}:{bound_port(server, port)}/runs"
                out.print(f"touchstone dashboard on {url} (store {where}); Ctrl+C stops it",
                          highlight=False, markup=False, soft_wrap=True)
                if open_browser and not _opened(webbrowser, url):
                    err.print(f"--open: no web browser could be started here; open {url} yourself",
                              highlight=False, markup=False, soft_wrap=True)
                return
            time.sleep(0.05)

    threading.Thread(target=wait, daemon=True, name="touchstone-ui-announce").start()
