"""Record the compatibility suite's golden outputs with the real ``azure-ai-evaluation``.

A one-off developer step (the goldens are committed; tests never need the SDK)::

    python tests/compat/record.py --sdk-python /tmp/azvenv/bin/python [snippet ...]

The SDK must be installed in that interpreter's environment, pinned to the version the goldens were
recorded with (``azure-ai-evaluation==1.18.10``). The fake judge (``tests/compat/judge.py``) runs in
this process on 127.0.0.1; snippets run offline. nltk data the SDK tries to download is whatever the
environment has: ``--nltk-data DIR`` names a folder holding the real ``punkt_tab``,
``perluniprops`` and ``wordnet``. Without it, a stub ``punkt_tab`` (English, empty parameters) is
written to a temporary folder: on the single ASCII sentences of the BLEU and GLEU snippets its
tokens are those of the real model (no abbreviation or sentence-boundary decision is involved), so
those values are recorded; METEOR, which needs ``wordnet``, records the SDK's ``LookupError``. Each
golden says which it had in ``nltk_data``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``tests`` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.compat.harness import GOLDEN, dumps_record, golden_path, run_all, snippet_names
from tests.compat.judge import compat_judge
from tests.fakes.openai_server import FakeOpenAIServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sdk-python", required=True, help="python of an environment with azure-ai-evaluation"
    )
    parser.add_argument("--nltk-data", help="folder with the real nltk data (default: a stub punkt_tab)")
    parser.add_argument("snippets", nargs="*", help="names to record (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compat-nltk-") as stub:
        if args.nltk_data:
            os.environ["NLTK_DATA"] = args.nltk_data
            nltk_data = "real"
        else:
            english = Path(stub) / "tokenizers" / "punkt_tab" / "english"
            english.mkdir(parents=True)
            for name in ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab"):
                (english / name).write_text("", encoding="utf-8")
            os.environ["NLTK_DATA"] = stub
            nltk_data = "stub punkt_tab (English, empty parameters); no wordnet, no perluniprops"
        return _record(args, nltk_data)


def _record(args: argparse.Namespace, nltk_data: str) -> int:
    version = subprocess.run(
        [
            args.sdk_python,
            "-c",
            "from importlib.metadata import version; print(version('azure-ai-evaluation'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    names = args.snippets or snippet_names()
    server = FakeOpenAIServer(handler=compat_judge).start()
    try:
        results = run_all(names, args.sdk_python, server.base_url, touchstone=False)
    finally:
        server.stop()
    GOLDEN.mkdir(exist_ok=True)
    for name, result in results.items():
        record = {"sdk_version": version, "nltk_data": nltk_data, **result}
        golden_path(name).write_text(dumps_record(record), encoding="utf-8")
        state = "ok" if result["ok"] else f"raised {result['error']}"
        print(f"{name}: {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
