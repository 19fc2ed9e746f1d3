"""Every install hint names this project's own distribution, ``touchstone-genai`` (PyPI's
``touchstone`` and ``touchstone-eval`` are other projects), and the distribution is named so."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import touchstone

PACKAGE = Path(touchstone.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
DISTRIBUTION = "touchstone-genai"
INSTALL = re.compile(r"pip install\s+(?P<what>[^\s`)]+)")


def _strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_distribution_has_its_own_name() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^name = "touchstone-genai"$', text, re.MULTILINE)
    assert '"touchstone[' not in text  # extras that include others name this distribution too


def test_every_hint_names_the_project_by_its_distribution() -> None:
    wrong: list[str] = []
    seen = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        for text in _strings(path):
            for match in INSTALL.finditer(text):
                what = match.group("what").strip("'\"")
                if what.split("[")[0] in ("touchstone", "touchstone-eval"):
                    wrong.append(f"{path.relative_to(PACKAGE)}: {match.group(0)}")
                seen += what.startswith(f"{DISTRIBUTION}[")
    assert not wrong
    assert seen >= 5  # the extras' hints (ui, postgres, ray, local, anthropic...) were all found
