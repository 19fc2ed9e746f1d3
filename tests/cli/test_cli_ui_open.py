"""``touchstone ui --open`` on a machine without a web browser says so instead of doing nothing."""

from __future__ import annotations

import time
import webbrowser

import pytest

from touchstone.cli import ui as ui_cli


class _Up:
    started = True


def test_open_without_a_browser_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(webbrowser, "open", lambda url: False)  # what webbrowser answers with no browser
    monkeypatch.setattr(ui_cli, "bound_port", lambda server, port: 8765)
    ui_cli._announce_when_up(_Up(), "127.0.0.1", 8765, "runs.db", True)
    seen = ""
    for _ in range(100):
        seen += capsys.readouterr().err
        if "no web browser" in seen:
            break
        time.sleep(0.05)
    assert "no web browser could be started here; open http://127.0.0.1:8765/runs yourself" in " ".join(
        seen.split()
    )
