"""Deterministic sampling: whether an interaction is kept depends on its id alone.

The id is hashed (BLAKE2b, no seed, no process-dependent salt) to a number in [0, 1); the
interaction is kept when that number is under the rate. The same id is therefore kept or dropped in
every process and every restart, and spans of one trace, sampled by their trace id, stay together.
"""

from __future__ import annotations

import hashlib

_SCALE = float(1 << 64)


def sample_point(key: str) -> float:
    """Where ``key`` falls in [0, 1): the first 8 bytes of its BLAKE2b digest as a fraction."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def keep(key: str, rate: float) -> bool:
    """True when the interaction with id (or trace id) ``key`` is in a sample at ``rate`` (0-1)."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return sample_point(key) < rate
