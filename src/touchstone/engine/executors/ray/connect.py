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


def connect(address: str | None) -> Any:
    """Ray, connected to the cluster at ``address`` (once per process)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        except ConnectionError as exc:
            raise ConfigurationError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    return ray
