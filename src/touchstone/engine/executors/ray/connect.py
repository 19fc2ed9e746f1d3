"""Ray itself, imported when a run uses it, and the connection to the cluster (once per process)."""

from __future__ import annotations

from typing import Any

from touchstone.errors import ConfigurationError

INSTALL_HINT = "pip install 'touchstone-genai[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigurationError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(f"the Ray executor needs Ray: {INSTALL_HINT}") from None
    return ray


PROBE_SECONDS = 5.0
"""How long a cluster's address is given to accept a connection before the run is refused (Ray's own
client would retry for minutes, printing one line per attempt)."""


def check_address(address: str | None, timeout: float = PROBE_SECONDS) -> None:
    """Refuse an address that is not ``host:port`` or where nothing accepts a connection, at once
    (:class:`ConfigurationError` naming it). ``None``, ``auto``, ``local`` and ``ray://`` client
    addresses are left to Ray."""
    import socket

    if address is None or address in ("auto", "local") or address.startswith("ray://"):
        return
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigurationError(
            f"--ray-address {address!r} is not an address; expected HOST:PORT of a Ray head (e.g. "
            "127.0.0.1:6379), 'auto', or nothing for a local cluster"
        )
    try:
        with socket.create_connection((host, int(port_text)), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"no Ray cluster answers at {address}: {reason}") from None


def connect(address: str | None) -> Any:
    """Ray, connected to the cluster at ``address`` (once per process), quietly: Ray's own INFO lines
    stay out of touchstone's output."""
    import logging

    ray = import_ray()
    if not ray.is_initialized():
        check_address(address)
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
                     logging_level=logging.WARNING)
        except ConnectionError as exc:
            raise ConfigurationError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    return ray
