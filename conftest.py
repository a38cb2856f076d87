"""The test suite's root: with the Go client's engine compiled (``simbatch compile``), its
modules' sources are not collected for doctests, since Python imports their extensions, whose
``__file__`` is not the source pytest collects (``simbatch/native.py``);
``tests/test_native.py`` compares the compiled engine with the Python one."""

from __future__ import annotations

from pathlib import Path

from simbatch import native


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if collection_path.parent == native.PACKAGE and collection_path.stem in native.compiled():
        return True
    return None
