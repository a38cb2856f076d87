"""Project habits, checked by the test command: ruff on the whole tree, mypy on simbatch/,
no command line that takes abbreviated options, and every example in the README runs as
written."""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from simhelp import ROOT


def _tool(name: str) -> list[str]:
    if shutil.which(name) is None:
        pytest.fail(f"{name} is not installed: the dev extra installs it "
                    "(python -m pip install -e '.[dev]')")
    return [sys.executable, "-m", name]


def test_ruff_passes():
    proc = subprocess.run([*_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_passes_on_simbatch():
    proc = subprocess.run(_tool("mypy"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _parsers_allowing_abbreviations() -> list[str]:
    """Every ``ArgumentParser(...)``, subclass call or ``add_parser(...)`` in the tree that
    does not pass ``allow_abbrev=False`` (argparse accepts ``--o`` for ``--out`` otherwise)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if any(part.startswith(".") or part in ("build", "node_modules") for part in
               path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name not in ("ArgumentParser", "_Parser", "add_parser"):
                continue
            if not any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant)
                       and k.value.value is False for k in node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_command_line_takes_abbreviated_options():
    assert _parsers_allowing_abbreviations() == []


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _commands() -> list[str]:
    """The README's shell commands that run simbatch (an install before ``&&`` is done)."""
    out = []
    for block in _blocks(""):
        for line in block.splitlines():
            line = line.split("&&")[-1].strip()
            if line.startswith("simbatch ") and "[" not in line and "FILE" not in line:
                out.append(line)
    return out


def test_the_readme_has_examples():
    assert len(_commands()) >= 3 and len(_blocks("python")) >= 1


@pytest.mark.parametrize("command", _commands())
def test_readme_command_runs(command, tmp_path):
    proc = subprocess.run(shlex.split(command), cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_readme_python_example_runs(index):
    code = _blocks("python")[index]
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
