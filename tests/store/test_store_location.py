"""An unusable default location never crashes: the run store and the judge cache warn once and keep
things in memory. A location given explicitly that cannot be used is an error naming it.

Root ignores file permissions, so the home directory is made unusable by putting a regular file
where a folder should be (``NotADirectoryError`` / ``FileExistsError`` for everyone)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from touchstone.errors import ConfigurationError
from touchstone.judges.cache import CacheLocationWarning, JudgeCache
from touchstone.judges.config import default_cache_path
from touchstone.store import RunStore, ScoreRecord, StoreLocationWarning, open_store


@pytest.fixture(params=["home_is_a_file", "dot_touchstone_is_a_file"])
def bad_home(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if request.param == "home_is_a_file":
        home = tmp_path / "file.txt"
        home.write_text("not a folder")
    else:
        home = tmp_path / "home"
        home.mkdir()
        (home / ".touchstone").write_text("not a folder")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TOUCHSTONE_STORE", raising=False)
    monkeypatch.delenv("TOUCHSTONE_CACHE", raising=False)
    return home


def test_default_store_falls_back_to_memory_and_warns_once(bad_home: Path) -> None:
    with pytest.warns(StoreLocationWarning) as caught:
        store = open_store()
    (warning,) = caught
    text = str(warning.message)
    assert str(bad_home / ".touchstone" / "runs.db") in text and "memory only" in text
    assert not store.persistent and str(store.path) == ":memory:"

    run_id = store.create_run({"n": 1}, None, "0.2.0")  # it works, in memory
    store.put_scores(run_id, "f", [ScoreRecord(0, {"f": 1.0}, False, None)])
    assert store.count_scores(run_id) == 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second store in the same process: no second warning
        again = RunStore()
    assert not again.persistent
    assert not (bad_home / ".touchstone").is_dir()


def test_default_cache_falls_back_to_memory_and_warns_once(bad_home: Path) -> None:
    with pytest.warns(CacheLocationWarning) as caught:
        cache = JudgeCache(default_cache_path())  # as the judge session opens it
    (warning,) = caught
    text = str(warning.message)
    assert str(bad_home / ".touchstone" / "cache.db") in text and "memory only" in text
    assert not cache.persistent
    cache.put_chat("k", "model", {"content": "4"})
    assert cache.get_chat("k") == {"content": "4"}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not JudgeCache().persistent


def test_explicit_store_path_that_cannot_be_used_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    target = blocker / "runs.db"
    with pytest.raises(ConfigurationError, match="cannot use the run store") as err:
        open_store(target)
    assert str(target) in str(err.value)


def test_store_path_from_the_environment_is_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    monkeypatch.setenv("TOUCHSTONE_STORE", str(blocker / "runs.db"))
    with pytest.raises(ConfigurationError, match=re.escape(str(blocker / "runs.db"))):
        RunStore()


def test_explicit_cache_path_that_cannot_be_used_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    with pytest.raises(ConfigurationError, match="cannot use the judge cache") as err:
        JudgeCache(blocker / "cache.db")
    assert str(blocker / "cache.db") in str(err.value)
    monkeypatch.setenv("TOUCHSTONE_CACHE", str(blocker / "env.db"))
    with pytest.raises(ConfigurationError, match=re.escape(str(blocker / "env.db"))):
        JudgeCache(default_cache_path())


def test_a_file_that_is_not_a_database_is_an_error_when_explicit(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigurationError, match=re.escape(str(junk))):
        RunStore(junk)
