"""``POST /api/feedback`` and the people-in-the-loop JSON: malformed bodies get a 4xx naming the
field, the optional bearer token is enforced, events land in the store linked to interactions, and
a run's rows can be filtered by their feedback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.people.conftest import make_run

from touchstone.people import annotations as an
from touchstone.people import feedback as fb
from touchstone.store import open_store
from touchstone.store.base import Store

testclient = pytest.importorskip("fastapi.testclient")

TOKEN = "s3cret-token"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(str(tmp_path / "runs.db"))
    try:
        yield s
    finally:
        s.close()


def _client(store: Store, token: str | None = None) -> Any:
    from touchstone.ui import create_app

    return testclient.TestClient(create_app(store, feedback_token=token))


@pytest.mark.parametrize(("body", "headers", "status", "field"), [
    (b"{not json", {"Content-Type": "application/json"}, 400, "body"),
    (b"[" * 200_000, {"Content-Type": "application/json"}, 400, "body"),
    (b'{"interaction_id": "i", "kind": "thumbs_up"}', {"Content-Type": "text/plain"}, 415, "content-type"),
    (b'{"interaction_id": "i", "kind": "thumbs_up"}', {}, 415, "content-type"),
    (b'{"kind": "thumbs_up"}', {"Content-Type": "application/json"}, 422, "interaction_id"),
    (b'{"interaction_id": "i", "kind": "rating", "value": 11}', {"Content-Type": "application/json"}, 422,
     "value"),
    (b'{"interaction_id": "i", "kind": "error_report"}', {"Content-Type": "application/json"}, 422, "text"),
    (b'[{"interaction_id": "i", "kind": "thumbs_up"}, 5]', {"Content-Type": "application/json"}, 422,
     "events[1]"),
    (b"[]", {"Content-Type": "application/json"}, 422, "events"),
    (b'"x"' + b" " * (1 << 20), {"Content-Type": "application/json"}, 413, "body"),
])
def test_malformed_bodies_get_a_4xx_naming_the_field(
    store: Store, body: bytes, headers: dict[str, str], status: int, field: str,
) -> None:
    with _client(store) as client:
        response = client.post("/api/feedback", content=body, headers=headers)
    assert response.status_code == status
    assert response.json()["field"] == field
    assert field.split("[")[0] in response.json()["error"] or status in (400, 413, 415)
    assert fb.feedback_for(store) == []


def test_token_is_required_when_set(store: Store) -> None:
    event = {"interaction_id": "q1", "kind": "thumbs_down"}
    with _client(store, TOKEN) as client:
        assert client.post("/api/feedback", json=event).status_code == 401
        wrong = client.post("/api/feedback", json=event, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
        assert TOKEN not in wrong.text
        ok = client.post("/api/feedback", json=event, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 201 and ok.json() == {"accepted": 1}
    assert [e.interaction_id for e in fb.feedback_for(store)] == ["q1"]


def test_events_link_to_interactions_and_filter_a_runs_rows(store: Store) -> None:
    rows = [{"id": f"q{i}", "query": f"question {i}", "response": f"answer {i}"} for i in range(5)]
    run = make_run(store, "prod", rows, {"coherence": [(5.0, {"coherence_threshold": 3})] * 5})
    with _client(store) as client:
        sent = client.post("/api/feedback", json={"events": [
            {"interaction_id": "q1", "kind": "thumbs_down", "created": "2026-11-23T10:00:00Z"},
            {"interaction_id": "q3", "kind": "rating", "value": 5, "created": "2026-11-23T11:00:00Z"},
            {"interaction_id": "q3", "kind": "session_length", "value": 12.5,
             "created": "2026-11-23T11:00:00Z"},
        ]})
        assert sent.status_code == 201 and sent.json() == {"accepted": 3}
        failed = client.get(f"/api/runs/{run}/feedback", params={"column": "user_failure", "min": 1}).json()
        assert [r["idx"] for r in failed["rows"]] == [1]
        every = client.get(f"/api/runs/{run}/feedback").json()
        assert {r["idx"] for r in every["rows"]} == {1, 3}
        bad = client.get(f"/api/runs/{run}/feedback", params={"column": "nope"})
        assert bad.status_code == 400 and bad.json()["field"] == "column"
        windows = client.get("/api/feedback/windows", params={"window": "hour", "run": run,
                                                              "metric": "coherence"}).json()["windows"]
        assert [w["start"] for w in windows] == ["2026-11-23T10", "2026-11-23T11"]
        assert windows[0]["thumbs_up_rate"] == 0.0 and windows[0]["judge_mean"] == 5.0
        assert client.get("/api/feedback/windows", params={"window": "year"}).status_code == 400
        queue = client.get(f"/api/runs/{run}/queue", params={"budget": 1}).json()["items"]
        assert queue[0]["idx"] == 1 and "a user reported a failure" in queue[0]["reasons"]
        assert client.get("/api/runs/no-such-run/queue").status_code == 404


def test_answers_api_checks_what_it_stores(store: Store) -> None:
    run = make_run(store, "hidden-name", [{"query": "q", "response": "r"}] * 3)
    task = an.create_task_from_run(store, run, ["fluency"])
    with _client(store) as client:
        url = f"/api/annotate/{task.id}/answers"
        good = client.post(url, json={"annotator": "ann", "answers": [{"item": 1, "dimension": "fluency",
                                                                         "value": 4}]})
        assert good.status_code == 200 and good.json()["progress"]["done"] == 1
        for body in ({"annotator": "ann", "answers": [{"item": 1, "dimension": "fluency", "value": 9}]},
                     {"annotator": "", "answers": []}, {"annotator": "ann"}):
            assert client.post(url, json=body).status_code == 422
        missing = client.post("/api/annotate/nope/answers", json={"annotator": "a", "answers": []})
        assert missing.status_code == 404
        view = client.get(f"/api/annotate/{task.id}", params={"annotator": "ann"})
        assert view.status_code == 200 and "hidden-name" not in view.text
        assert view.json()["answers"] == {"1": {"fluency": 4}}
        page = client.get(f"/annotate/{task.id}", params={"annotator": "ann"})
        assert page.status_code == 200 and "hidden-name" not in page.text
        assert client.get(f"/annotate/{task.id}").status_code == 200
        assert client.get("/annotate/nope").status_code == 404
        assert client.get("/annotate").status_code == 200


def test_concurrent_posts_are_grouped_and_none_is_lost(store: Store) -> None:
    import asyncio

    import httpx

    from touchstone.ui import create_app

    app = create_app(store)

    async def post_all() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answers = await asyncio.gather(*(
                client.post("/api/feedback", json={"interaction_id": f"i{i}", "kind": "thumbs_up"})
                for i in range(60)))
        return [a.status_code for a in answers]

    assert asyncio.run(post_all()) == [201] * 60
    assert sorted(e.interaction_id for e in fb.feedback_for(store)) == sorted(f"i{i}" for i in range(60))


def test_the_endpoint_answers_like_every_route(store: Store) -> None:
    """The plain ASGI endpoint keeps what the framework gave the others: the security headers, 405
    for another method, the other feedback routes beside it."""
    from touchstone.ui.safety import SECURITY_HEADERS

    with _client(store, TOKEN) as client:
        ok = client.post("/api/feedback", json={"interaction_id": "q", "kind": "thumbs_up"},
                         headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 201 and ok.headers["content-type"] == "application/json"
        refused = client.post("/api/feedback", json={"interaction_id": "q", "kind": "thumbs_up"})
        for response in (ok, refused):
            for name, value in SECURITY_HEADERS.items():
                assert response.headers[name] == value
        assert client.get("/api/feedback").status_code == 405
        assert client.get("/api/feedback/windows").status_code == 200
        declared = client.post("/api/feedback", content=b"{}", headers={
            "Content-Type": "application/json; charset=utf-8", "Content-Length": str(1 << 21),
            "Authorization": f"Bearer {TOKEN}"})
        assert declared.status_code in (400, 413)  # refused without reading a body that never comes
    assert len(fb.feedback_for(store)) == 1


def test_a_store_that_cannot_write_answers_503_and_accepts_nothing(tmp_path: Path) -> None:
    broken = open_store(str(tmp_path / "runs.db"))
    with _client(broken) as client:
        broken.close()  # every write now fails
        response = client.post("/api/feedback", json={"interaction_id": "q", "kind": "thumbs_up"})
    assert response.status_code == 503
    assert "nothing was accepted" in response.json()["error"]
    reopened = open_store(str(tmp_path / "runs.db"))
    try:
        assert fb.feedback_for(reopened) == []
    finally:
        reopened.close()
