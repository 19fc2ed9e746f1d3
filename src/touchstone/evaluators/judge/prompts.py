"""Judge prompts as versioned data files (``touchstone/prompts/*.yaml``) and their rendering.

A prompt file holds ``name``, ``version``, ``description``, ``inputs`` (the placeholders filled with
text under evaluation) and ``params`` (placeholders filled with configuration, such as a domain name),
a ``system`` and a ``user`` template. Placeholders are ``{{name}}``. Every input is wrapped in a
``<data name="...">`` block whose content cannot close the block early, and every prompt tells the
judge that what is inside such a block is data, not instructions (SPEC 4).

Each template carries a hash of its file, stored with every score beside its version, so a score can
be traced to the exact words the judge saw.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from touchstone.errors import ConfigurationError

_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_OPEN = re.compile(r"<(\s*/?\s*)data", re.IGNORECASE)


def escape_data(text: str) -> str:
    """Neutralise anything in ``text`` that could open or close a data block."""
    return _OPEN.sub(lambda m: "&lt;" + m.group(0)[1:], text)


def delimit(name: str, text: str) -> str:
    """``text`` as a delimited data block named ``name``."""
    return f'<data name="{name}">\n{escape_data(text)}\n</data>'


def format_documents(documents: Sequence[Mapping[str, Any]]) -> str:
    """Documents ``{id, title?, content}`` as text, each introduced by its id (and title)."""
    parts = []
    for doc in documents:
        head = f"[document id={json.dumps(str(doc.get('id', '')), ensure_ascii=False)}"
        if doc.get("title"):
            head += f" title={json.dumps(str(doc['title']), ensure_ascii=False)}"
        parts.append(f"{head}]\n{doc.get('content', '')}\n[end of document]")
    return "\n\n".join(parts) if parts else "(no documents were retrieved)"


def format_history(messages: Sequence[Mapping[str, Any]]) -> str:
    """Earlier conversation turns as ``role: content`` lines."""
    return "\n\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages)


def format_answers(answers: str | Sequence[str]) -> str:
    """One or several reference answers; several are numbered."""
    if isinstance(answers, str):
        return answers
    if len(answers) == 1:
        return answers[0]
    return "\n".join(f"Correct answer {i + 1}: {a}" for i, a in enumerate(answers))


@dataclass(frozen=True)
class PromptTemplate:
    """One judge prompt: its identity (name, version, hash) and its two templates."""

    name: str
    version: str
    description: str
    inputs: tuple[str, ...]
    params: tuple[str, ...]
    system: str
    user: str
    hash: str
    """``sha256:`` and the first 16 hex digits of the file's hash (or of the custom definition's)."""

    @classmethod
    def from_text(cls, text: str, origin: str, extra_identity: str = "") -> PromptTemplate:
        """Parse a prompt file's text; ``extra_identity`` (e.g. a custom rubric) enters the hash."""
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigurationError(f"prompt {origin}: not valid YAML: {exc}") from None
        if not isinstance(doc, Mapping):
            raise ConfigurationError(f"prompt {origin}: expected a mapping")
        for key in ("name", "version", "user"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise ConfigurationError(f"prompt {origin}: missing string field {key!r}")
        inputs = tuple(doc.get("inputs") or ())
        params = tuple(doc.get("params") or ())
        system = str(doc.get("system") or "")
        used = set(_PLACEHOLDER.findall(system + doc["user"]))
        unknown = used - set(inputs) - set(params)
        if unknown:
            raise ConfigurationError(
                f"prompt {origin}: placeholders {sorted(unknown)} are neither inputs nor params"
            )
        digest = hashlib.sha256((text + extra_identity).encode("utf-8")).hexdigest()
        return cls(
            name=doc["name"],
            version=str(doc["version"]),
            description=str(doc.get("description") or ""),
            inputs=inputs,
            params=params,
            system=system,
            user=doc["user"],
            hash="sha256:" + digest[:16],
        )

    def with_identity(self, extra: str, version: str | None = None) -> PromptTemplate:
        """A copy whose hash also covers ``extra`` (a custom rubric's definition)."""
        digest = hashlib.sha256((self.hash + extra).encode("utf-8")).hexdigest()
        return PromptTemplate(
            self.name, version or self.version, self.description, self.inputs, self.params,
            self.system, self.user, "sha256:" + digest[:16],
        )

    def provenance(self) -> dict[str, str]:
        return {"prompt": self.name, "prompt_version": self.version, "prompt_hash": self.hash}

    def render(
        self, data: Mapping[str, str | None], params: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """Chat messages: inputs delimited as data blocks (absent ones dropped), params as text.

        Substitution is one pass, so text under evaluation that contains ``{{...}}`` stays literal."""
        params = dict(params or {})
        missing = [p for p in self.params if p not in params]
        if missing:
            raise ConfigurationError(f"prompt {self.name}: missing parameters {missing}")
        unknown = set(data) - set(self.inputs)
        if unknown:
            raise ValueError(f"prompt {self.name}: no inputs named {sorted(unknown)}")

        def fill(template: str) -> str:
            def sub(match: re.Match[str]) -> str:
                key = match.group(1)
                if key in self.params:
                    return str(params[key])
                value = data.get(key)
                return "" if value is None else delimit(key, value)

            text = _PLACEHOLDER.sub(sub, template)
            # drop the lines left empty by absent optional inputs, and collapse runs of blank lines
            return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"

        def filled(template: str) -> str:
            """``fill(template)``; a template with no input in it (a rubric, its params set) is the
            same text on every row: filled once and reused (the same string object, whose JSON form
            the judge layer memoises too)."""
            names = _slots(template)
            if any(name not in self.params for name in names):
                return fill(template)
            key = (template, tuple(str(params[name]) for name in names))
            text = _FILLED.get(key)
            if text is None:
                if len(_FILLED) >= 256:
                    _FILLED.clear()
                text = _FILLED[key] = fill(template)
            return text

        messages = []
        if self.system.strip():
            messages.append({"role": "system", "content": filled(self.system)})
        messages.append({"role": "user", "content": filled(self.user)})
        return messages


_FILLED: dict[tuple[str, tuple[str, ...]], str] = {}
"""Filled templates that hold no input (see ``render``), by template and parameter values."""
_SLOTS: dict[str, tuple[str, ...]] = {}


def _slots(template: str) -> tuple[str, ...]:
    """The placeholder names in ``template`` (found once per template text)."""
    names = _SLOTS.get(template)
    if names is None:
        if len(_SLOTS) >= 256:
            _SLOTS.clear()
        names = _SLOTS[template] = tuple(dict.fromkeys(_PLACEHOLDER.findall(template)))
    return names


def prompts_dir() -> Path:
    return Path(str(resources.files("touchstone") / "prompts"))


@functools.cache
def load_prompt(name: str) -> PromptTemplate:
    """The packaged prompt ``name`` (``touchstone/prompts/<name>.yaml``)."""
    path = prompts_dir() / f"{name}.yaml"
    if not path.is_file():
        raise ConfigurationError(f"no packaged prompt named {name!r} (looked for {path})")
    return PromptTemplate.from_text(path.read_text(encoding="utf-8"), str(path))


def load_prompt_file(path: str | Path) -> PromptTemplate:
    """A prompt from any file (to try a reworded prompt without changing the package)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read prompt file {p}: {exc.strerror}") from None
    return PromptTemplate.from_text(text, str(p))
