"""Scores written back as OpenTelemetry ``gen_ai.evaluation.result`` events (OTLP/HTTP, JSON logs).

One log record per (row, metric), named ``gen_ai.evaluation.result`` (``eventName`` and the
``event.name`` attribute), with ``gen_ai.evaluation.name`` (the metric), ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` (pass / fail) and ``gen_ai.evaluation.explanation`` (the judge's
reason) when there is one. A row that came from a span carries that span's trace and span ids, so a
tracing backend shows the evaluation on the call it judged. Sending never stops the monitor.
"""

from __future__ import annotations

import json
import logging
import math
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from touchstone.monitor.sinks import redact_url

log = logging.getLogger("touchstone.monitor")
EVENT = "gen_ai.evaluation.result"
BATCH = 1000


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, (int, float)):
        return {"key": key, "value": {"doubleValue": float(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def evaluation_records(rows: list[dict[str, Any]], metrics: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The OTLP log records of ``rows`` (``evaluate()``'s rows) for ``(evaluator, metric key)`` pairs."""
    now = str(time.time_ns())
    records: list[dict[str, Any]] = []
    for row in rows:
        trace_id, span_id = row.get("inputs.trace_id"), row.get("inputs.span_id")
        for evaluator, key in metrics:
            value = row.get(f"outputs.{evaluator}.{key}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                continue
            attrs = [
                _attr("event.name", EVENT),
                _attr("gen_ai.evaluation.name", evaluator),
                _attr("gen_ai.evaluation.score.value", value),
            ]
            label = row.get(f"outputs.{evaluator}.{key}_result")
            if isinstance(label, str) and label:
                attrs.append(_attr("gen_ai.evaluation.score.label", label))
            reason = row.get(f"outputs.{evaluator}.{key}_reason")
            if isinstance(reason, str) and reason:
                attrs.append(_attr("gen_ai.evaluation.explanation", reason))
            if row.get("inputs.id") is not None:
                attrs.append(_attr("touchstone.interaction.id", row["inputs.id"]))
            record: dict[str, Any] = {"timeUnixNano": now, "eventName": EVENT, "attributes": attrs}
            if isinstance(trace_id, str) and isinstance(span_id, str) and trace_id and span_id:
                record["traceId"], record["spanId"] = trace_id, span_id
            records.append(record)
    return records


def logs_request(records: list[dict[str, Any]]) -> dict[str, Any]:
    """An OTLP/JSON ``ExportLogsServiceRequest`` holding ``records``."""
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [_attr("service.name", "touchstone-monitor")]},
                "scopeLogs": [{"scope": {"name": "touchstone.monitor"}, "logRecords": records}],
            }
        ]
    }


class EvaluationExporter:
    """Sends each evaluated window's scores to an OTLP/HTTP collector's logs endpoint."""

    def __init__(self, url: str, *, retries: int = 2, timeout: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s) collector URL for --otlp-export, got {redact_url(url)!r}")
        self.url = url if parts.path.rstrip("/").endswith("/v1/logs") else url.rstrip("/") + "/v1/logs"
        self.shown = redact_url(self.url)
        self.retries, self.timeout = retries, timeout
        self.sent = 0

    def __call__(self, report: Any, rows: list[dict[str, Any]]) -> None:
        metrics = list(getattr(report, "metrics", None) or []) or _metrics_of(rows)
        records = evaluation_records(rows, metrics)
        for i in range(0, len(records), BATCH):
            self._post(logs_request(records[i : i + BATCH]), len(records[i : i + BATCH]))

    def _post(self, payload: dict[str, Any], n: int) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        why = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(0.5 * attempt)
            request = urllib.request.Request(
                self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                    reply.read()
                self.sent += n
                return
            except urllib.error.HTTPError as exc:
                why = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                why = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        log.warning("OTLP export to %s: %d evaluation events not sent (%s)", self.shown, n, why)


def _metrics_of(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(evaluator, key)`` pairs read from the rows' ``outputs.<evaluator>.<key>_result`` columns."""
    found: dict[tuple[str, str], None] = {}
    for row in rows[:1]:
        for column in row:
            if column.startswith("outputs.") and column.endswith("_result"):
                evaluator, _, key = column[len("outputs.") : -len("_result")].partition(".")
                found[(evaluator, key)] = None
    return list(found)
