"""Whether a run the store calls "running" still runs.

A run killed outright (SIGKILL, a power cut) never records its end, so its stored status stays
``running``. The run's config keeps the process id and host that started it; a running run whose
process is gone from this host is shown as ``interrupted`` (resumable with ``--resume``). Runs of
another host, or stored before the process was kept, are shown as stored.
"""

from __future__ import annotations

import os
import socket
from typing import Any


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (one we may not signal counts as existing)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def shown_status(status: str, config: dict[str, Any]) -> str:
    """``status`` as it should be shown: ``interrupted`` for a ``running`` run whose process on this
    host is gone."""
    if status != "running":
        return status
    process = config.get("process")
    if not isinstance(process, dict):
        return status
    pid, host = process.get("pid"), process.get("host")
    if host != socket.gethostname() or not isinstance(pid, int):
        return status
    return status if process_alive(pid) else "interrupted"
