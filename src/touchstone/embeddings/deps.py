"""Optional heavy dependencies (the ``touchstone-genai[local]`` extra): checked early, imported late.

torch, transformers, sentence-transformers and bert-score are never imported at module level. An
evaluator that needs them calls :func:`check_local` when it is built (cheap: it only looks the
modules up) so a missing one is reported before any work starts, as one line saying what to install,
and :func:`import_local` when it first scores.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from types import ModuleType

from touchstone._exceptions import ErrorCategory
from touchstone.errors import ConfigurationError

INSTALL_HINT = "pip install 'touchstone-genai[local]'"

_DISTRIBUTIONS = {
    "torch": "torch",
    "transformers": "transformers",
    "sentence_transformers": "sentence-transformers",
    "bert_score": "bert-score",
}


_IMPORT_PID = os.getpid()


def guard_forked_torch() -> None:
    """Call before running a model. In a process forked from one where torch already ran (the engine's
    process pool uses fork), torch's OpenMP thread pool did not survive the fork and the first
    parallel operation hangs; with one intra-op thread torch never enters it. One thread per worker
    process is also what a pool of workers wants (no oversubscription)."""
    if os.getpid() != _IMPORT_PID and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)


class MissingDependencyError(ConfigurationError):
    """An optional dependency of a local-model metric is not installed (category ``MISSING_PACKAGE``)."""

    default_category = ErrorCategory.MISSING_PACKAGE


def _message(feature: str, missing: list[str]) -> str:
    names = ", ".join(_DISTRIBUTIONS.get(m, m) for m in missing)
    verb = "is" if len(missing) == 1 else "are"
    return f"{feature} needs {names}, which {verb} not installed: {INSTALL_HINT}"


def check_local(feature: str, *modules: str) -> None:
    """Raise :class:`MissingDependencyError` (one line with the install command) when any of
    ``modules`` cannot be found. Nothing is imported."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(_message(feature, missing))


def import_local(feature: str, module: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = (exc.name or module).split(".")[0]
        raise MissingDependencyError(_message(feature, [top])) from None


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """While a local model loads: no progress bars or info lines from transformers or the hub on the
    terminal (they would land between touchstone's own output); their settings are put back after."""
    transformers = sys.modules.get("transformers") or importlib.import_module("transformers")
    hf_logging = transformers.utils.logging
    bars_were_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_were_on:
            hf_logging.enable_progress_bar()
