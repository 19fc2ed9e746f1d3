"""The judge cache's file (store/judge_cache.py): replies and vectors by key, every SQLite failure
reported as a JudgeCacheError that says whether the file is damaged; and the cache's policy over it
(judges/cache.py): a damaged file is set aside with one warning, never failing a row."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from touchstone.judges.cache import CacheFailureWarning, JudgeCache
from touchstone.store.judge_cache import MEMORY, JudgeCacheError, JudgeCacheFile


def test_replies_and_vectors_round_trip(tmp_path: Path) -> None:
    cache = JudgeCacheFile(tmp_path / "sub" / "c.db")
    assert cache.get_chat("k") is None
    cache.put_chat("k", "m", '{"choices": ["x"]}')
    cache.put_chat("k", "m", '{"choices": ["y"]}')  # replaced
    cache.put_vectors("e", [(f"v{i}", [float(i), 0.5]) for i in range(700)])  # more keys than one query takes
    assert cache.get_chat("k") == '{"choices": ["y"]}'
    found = cache.get_vectors([f"v{i}" for i in range(700)] + ["missing"])
    assert len(found) == 700 and found["v699"] == [699.0, 0.5]
    assert cache.count() == 701
    cache.close()
    assert JudgeCacheFile(tmp_path / "sub" / "c.db").count() == 701  # on disk


def test_a_damaged_file_is_reported_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.write_bytes(b"garbage, not a database" * 200)
    with pytest.raises(JudgeCacheError) as caught:
        JudgeCacheFile(path)
    assert caught.value.damaged


def test_a_closed_file_fails_every_operation_as_not_damaged() -> None:
    cache = JudgeCacheFile(MEMORY)
    cache.close()
    for operation in (lambda: cache.get_chat("k"), lambda: cache.put_chat("k", "m", "{}"),
                      lambda: cache.get_vectors(["k"]), lambda: cache.put_vectors("m", [("k", [1.0])])):
        with pytest.raises(JudgeCacheError) as caught:
            operation()
        assert not caught.value.damaged


def test_the_cache_sets_a_damaged_file_aside_and_keeps_going(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.write_bytes(b"garbage, not a database" * 200)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cache = JudgeCache(path)
    assert [w.category for w in seen] == [CacheFailureWarning] and cache.broken and not cache.persistent
    cache.put_chat("k", "m", {"choices": ["x"]})
    assert cache.get_chat("k") is None and cache.get_embeddings(["k"]) == {}


def test_a_reply_that_is_not_json_disables_the_cache(tmp_path: Path) -> None:
    JudgeCacheFile(tmp_path / "c.db").put_chat("k", "m", "not json")
    cache = JudgeCache(tmp_path / "c.db")
    with pytest.warns(CacheFailureWarning):
        assert cache.get_chat("k") is None
    assert cache.broken
