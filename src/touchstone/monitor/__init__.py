"""Monitoring of production traffic: interactions in, per-window evaluations and alerts out.

Interactions (a row in the data format of SPEC 2 plus ``timestamp`` and an optional ``id``) arrive
from a tailed directory of JSONL files (:mod:`.sources.jsonl`), from OpenTelemetry GenAI traces or
touchstone's own endpoint over HTTP (:mod:`.sources.http`, :mod:`.sources.otlp`). Each is validated
(:mod:`.interactions`), sampled deterministically by its id (:mod:`.sampling`) and put in its tumbling
time window (:mod:`.windows`). A window is evaluated by ``evaluate()`` when it closes and stored as a
run (:mod:`.store`); :mod:`.alerts` compares it with its thresholds and with earlier windows, and
:mod:`.sinks` sends the alerts out. :class:`~.service.Monitor` ties these together.
"""

from __future__ import annotations

from touchstone.monitor.alerts import Alert
from touchstone.monitor.interactions import Interaction, InteractionError, parse_interaction
from touchstone.monitor.sampling import keep
from touchstone.monitor.service import Monitor, MonitorConfig, WindowReport
from touchstone.monitor.windows import parse_duration, window_start

__all__ = [
    "Alert",
    "Interaction",
    "InteractionError",
    "Monitor",
    "MonitorConfig",
    "WindowReport",
    "keep",
    "parse_duration",
    "parse_interaction",
    "window_start",
]
