"""``collector_paused`` turns the cyclic collector off for its block and restores it as it was."""

from __future__ import annotations

import gc

import pytest

from touchstone._gc import collector_paused


def test_paused_inside_and_restored_after_even_on_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
