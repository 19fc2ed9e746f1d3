"""Which executor runs a run (``evaluate(executor=...)``) and whether Ray Data reads its input.

Ray stays an optional dependency: the Ray executor's module is imported only when a run names it,
and a Ray Dataset is recognised without importing Ray.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from touchstone.data.loaders import Record
from touchstone.engine.executors.base import Executor
from touchstone.engine.executors.local import LocalExecutor
from touchstone.errors import ConfigurationError

if TYPE_CHECKING:
    from touchstone.engine.executors.ray.executor import RayExecutor

ExecutorChoice = Union[str, "RayExecutor", None]
"""What ``evaluate(executor=...)`` takes: ``None`` or ``"local"``, ``"ray"``, or a configured
:class:`~touchstone.engine.executors.RayExecutor`."""


def make_executor(
    choice: ExecutorChoice, records: Sequence[Record], options: Mapping[str, Any], *, processes: int = 0,
    whole: Sequence[Record] | None = None,
) -> Executor:
    """The executor ``choice`` names, for a run over ``records`` (``options``: the run's judge
    settings, which remote judge workers need to open their own sessions; ``whole``: every record,
    when the run holds them all)."""
    if choice is None or choice == "local":
        return LocalExecutor(records, processes=processes, whole=whole)
    from touchstone.engine.executors.ray.executor import RayExecutor

    if choice == "ray":
        return RayExecutor().bind(records, options)
    if isinstance(choice, RayExecutor):
        return choice.bind(records, options)
    raise ConfigurationError(f"executor must be 'local', 'ray' or a RayExecutor, got {choice!r}")


def reads_with_ray(data: Any, executor: Any) -> bool:
    """True when Ray Data reads the input: a Ray Dataset, or a file path under the Ray executor
    (``executor="ray"`` or a :class:`~touchstone.engine.executors.RayExecutor`)."""
    if is_ray_dataset(data):
        return True
    if not isinstance(data, (str, os.PathLike)) or executor is None:
        return False
    if executor == "ray":
        return True
    # the executor's module imports no Ray: Ray is imported when a run uses it
    from touchstone.engine.executors.ray.executor import RayExecutor

    return isinstance(executor, RayExecutor)


def is_ray_dataset(data: Any) -> bool:
    """True for a ``ray.data.Dataset`` (checked without importing Ray)."""
    return type(data).__module__.startswith("ray.data.") and hasattr(data, "iter_batches")
