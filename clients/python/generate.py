"""Regenerate the client's generated modules; `--check` fails (exit 1) when a committed one differs.

    .venv/bin/python clients/python/generate.py            # from the server in this repository
    .venv/bin/python clients/python/generate.py --url http://127.0.0.1:8000
    .venv/bin/python clients/python/generate.py --check    # what tests/client/test_generated_code.py runs

- `models.py`: pydantic v2 models of every schema of /openapi.json (the answers are parsed into them);
- `params.py`: the same schemas as TypedDicts (the keyword arguments of the resource methods, checked
  by mypy);
- `sync_client.py`: `async_client.py` with `async`/`await` taken out (as httpcore does it), so the two
  clients cannot drift apart.

The models come from `datamodel-code-generator`, at the exact version the server's `test` extra pins:
another version may write the same models differently.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "src" / "moneyrail_client"
HEADER = "Generated from moneyrail's /openapi.json by clients/python/generate.py: do not edit."
COMMON_OPTIONS = [
    "--input-file-type=openapi",
    "--target-python-version=3.11",
    "--use-double-quotes",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-annotated",
    "--field-constraints",
    "--enum-field-as-literal=all",
    "--collapse-root-models",
    "--disable-timestamp",
    "--type-mappings",
    "email=string",  # an address is the service's to check; no email-validator needed here
    "--formatters",
    "builtin",
    "--custom-file-header",
    f"# {HEADER}",
]
MODEL_OPTIONS = {
    "models.py": ["--output-model-type=pydantic_v2.BaseModel", "--use-schema-description"],
    "params.py": ["--output-model-type=typing.TypedDict"],
}
# async_client.py -> sync_client.py
UNASYNC = [
    (re.compile(r"\basync def\b"), "def"),
    (re.compile(r"\basync (for|with)\b"), r"\1"),
    (re.compile(r"\bawait "), ""),
    (re.compile(r"^import asyncio\n", re.MULTILINE), ""),
    (re.compile(r"\basyncio\.sleep\b"), "time.sleep"),
    (re.compile(r"\b__aenter__\b"), "__enter__"),
    (re.compile(r"\b__aexit__\b"), "__exit__"),
    (re.compile(r"\b__aiter__\b"), "__iter__"),
    (re.compile(r"\baclose\b"), "close"),
    (re.compile(r"\bAsync([A-Z]\w*)"), r"\1"),
    (re.compile(r"\basynchronous\b"), "synchronous"),
]


def openapi_of_this_repository() -> dict[str, Any]:
    from moneyrail.app import create_app
    from moneyrail.config import Settings

    document: dict[str, Any] = create_app(
        Settings(database_url="postgresql://unused@127.0.0.1/unused")
    ).openapi()
    return document


def openapi_at(url: str) -> dict[str, Any]:
    import httpx

    document: dict[str, Any] = (
        httpx.get(f"{url.rstrip('/')}/openapi.json", timeout=30).raise_for_status().json()
    )
    return document


def generated_models(document: dict[str, Any]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "openapi.json"
        source.write_text(json.dumps(document, indent=1))
        texts = {}
        for name, options in MODEL_OPTIONS.items():
            output = Path(folder) / name
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "datamodel_code_generator",
                    f"--input={source}",
                    f"--output={output}",
                    *COMMON_OPTIONS,
                    *options,
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            texts[name] = output.read_text()
        return texts


def sync_client(async_source: str) -> str:
    docstring_end = async_source.index('"""', 3) + 3  # the async module's own docstring is replaced
    text = async_source[docstring_end:]
    for pattern, replacement in UNASYNC:
        text = pattern.sub(replacement, text)
    header = HEADER.replace("/openapi.json", "async_client.py")
    text = f'"""The synchronous client, `Moneyrail`.\n\n{header}\n"""' + text
    return formatted(text, PACKAGE / "sync_client.py")


def formatted(text: str, path: Path) -> str:
    """`ruff format`, with the repository's settings (lines get shorter without `await`)."""
    command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    return subprocess.run(command, input=text, check=True, capture_output=True, text=True, cwd=HERE).stdout


def wanted_files(document: dict[str, Any]) -> dict[Path, str]:
    files = {PACKAGE / name: text for name, text in generated_models(document).items()}
    files[PACKAGE / "sync_client.py"] = sync_client((PACKAGE / "async_client.py").read_text())
    return files


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a running moneyrail's address (default: this repository's app)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file differs")
    arguments = parser.parse_args()
    document = openapi_at(arguments.url) if arguments.url else openapi_of_this_repository()
    drifted = []
    for path, text in wanted_files(document).items():
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        drifted.append(path)
        if arguments.check:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), str(path), "regenerated", lineterm="", n=1
            )
            print("\n".join(list(diff)[:60]))
        else:
            path.write_text(text)
    if arguments.check and drifted:
        names = ", ".join(str(path.relative_to(HERE)) for path in drifted)
        print(f"\nout of date: {names}; run: .venv/bin/python clients/python/generate.py", file=sys.stderr)
        return 1
    for path in drifted if not arguments.check else []:
        print(f"wrote {path.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
