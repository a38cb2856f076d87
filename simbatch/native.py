"""The Go client's engine compiled to C with mypyc: the same code, run faster.

simbatch runs as plain Python. ``simbatch compile`` builds the modules that simulate the Go
client goroutine by goroutine (:data:`MODULES`, the engine used when a case sets ``[go]
gomaxprocs``) into C extensions beside their sources, with mypyc: mypy's own compiler
(mypy is in the ``dev`` extra), which compiles type-checked Python as it stands, so there is
one source to read and to change. It needs a C compiler and Python's headers.
``simbatch compile --clean`` removes the extensions.

The results are the same: the compiled code does the same double-precision operations in
the same order (``tests/test_native.py`` compares every frame of a set of runs). Python
imports an extension in preference to its source, so a source edited after it was compiled
would silently not run: the build records each source's hash (:data:`MANIFEST`), and
``import simbatch`` with a source that differs from the one compiled removes the compiled
modules before they load and says so (:func:`check`): the package runs as Python until
``simbatch compile`` builds them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

MODULES = ("scheduler", "goclient", "gosync", "slicepool", "records")
"""The modules of :mod:`simbatch.batching` that are compiled: the scheduler's run loop, the
goroutines, their channels, the worker's slice pool, and the run's records, which the
goroutines write once per item (the Go engine's million-input block in 0.94x the time with
them compiled; the engine without ``[go]``, which calls them from Python, in 0.94-1.03x,
2026-11-28). Not the pydantic configurations."""
GROUP = "_native"
"""The shared library the compiled modules live in (``simbatch/batching/_native__mypyc*``)."""
MANIFEST = "_native.json"
"""Beside the modules: the hash of each source as it was compiled."""
PACKAGE = Path(__file__).resolve().parent / "batching"

_MYPY_INI = """[mypy]
python_version = {major}.{minor}
plugins = pydantic.mypy
ignore_missing_imports = True
disable_error_code = annotation-unchecked
"""
_SETUP = """import sys
from setuptools import setup
from mypyc.build import mypycify
setup(name="simbatch-native", script_args=["build_ext", "--inplace"],
      ext_modules=mypycify(sys.argv[1:], opt_level="3", group_name={group!r}))
"""


class NativeError(ImportError):
    """A compiled module that no longer matches its source, or a build that failed."""


def _extensions(package: Path, name: str) -> list[Path]:
    return [package / f"{name}{suffix}" for suffix in EXTENSION_SUFFIXES
            if (package / f"{name}{suffix}").exists()]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled(package: Path = PACKAGE) -> list[str]:
    """The modules of :data:`MODULES` that have an extension beside their source."""
    return [name for name in MODULES if _extensions(package, name)]


def check(package: Path = PACKAGE) -> None:
    """Before the compiled modules load: if a source is not the one compiled, remove every
    compiled module (they call each other directly, so none may stay) and say so on
    standard error; the package then runs as Python. Raises :class:`NativeError` if they
    cannot be removed."""
    names = compiled(package)
    if not names:
        return
    manifest = package / MANIFEST
    try:
        recorded = json.loads(manifest.read_text())
    except (OSError, ValueError):
        recorded = {}
    stale = [name for name in names if recorded.get(name) != _digest(package / f"{name}.py")]
    if not stale:
        return
    what = (f"{package / (stale[0] + '.py')} is not the source its compiled module was built "
            f"from (edited since, or built without {MANIFEST})")
    try:
        clean(package)
    except OSError as e:
        raise NativeError(f"simbatch: {what}, and the compiled modules cannot be removed "
                          f"({e}); remove them, or run `simbatch compile` again") from None
    print(f"simbatch: {what}: removed the compiled modules, running as Python; "
          f"`simbatch compile` builds them again", file=sys.stderr)


def copy_package(root: Path, package: Path = PACKAGE) -> Path:
    """Copy the ``simbatch`` package whose ``batching`` folder is ``package`` to
    ``root/simbatch``, as sources only (no compiled modules, no caches); the copy's
    ``batching`` folder."""
    shutil.copytree(package.parent, root / "simbatch", ignore=shutil.ignore_patterns(
        "__pycache__", MANIFEST, *(f"*{suffix}" for suffix in EXTENSION_SUFFIXES)))
    return root / "simbatch" / "batching"


def clean(package: Path = PACKAGE) -> list[Path]:
    """Remove the compiled modules, their shared library and the manifest; the removed."""
    removed = [ext for name in (*MODULES, GROUP + "__mypyc") for ext in _extensions(package,
                                                                                     name)]
    if (package / MANIFEST).exists():
        removed.append(package / MANIFEST)
    for path in removed:
        path.unlink()
    return removed


def build(package: Path = PACKAGE) -> list[str]:
    """Compile :data:`MODULES` of the ``simbatch`` package whose ``batching`` folder is
    ``package`` and put the extensions beside their sources; the modules compiled.

    The build runs in a temporary copy of the package (mypy type-checks the whole of it),
    so a failed build leaves ``package`` as it was, and the hashes recorded are those of
    the sources compiled, even if one is edited meanwhile. Raises :class:`NativeError` with the
    compiler's last lines if mypyc or the C compiler fails or is missing."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        raise NativeError("simbatch compile: mypyc is not installed (it comes with mypy: "
                          "python -m pip install -e \".[dev]\")") from None
    with tempfile.TemporaryDirectory(prefix="simbatch-native-") as tmp:
        root = Path(tmp)
        built = copy_package(root, package)
        (root / "mypy.ini").write_text(_MYPY_INI.format(major=sys.version_info.major,
                                                        minor=sys.version_info.minor))
        (root / "setup_native.py").write_text(_SETUP.format(group=f"simbatch.batching.{GROUP}"))
        sources = [f"simbatch/batching/{name}.py" for name in MODULES]
        env = {**os.environ, "MYPY_FORCE_COLOR": "0"}
        done = subprocess.run([sys.executable, "setup_native.py", *sources], cwd=root,
                              env=env, capture_output=True, text=True)
        if done.returncode != 0 or not compiled(built):
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
            raise NativeError(f"simbatch compile: the build failed (mypyc and a C compiler "
                              f"with Python's headers are needed):\n{tail}")
        clean(package)
        for name in (*MODULES, GROUP + "__mypyc"):
            for ext in _extensions(built, name):
                shutil.copy2(ext, package / ext.name)
        (package / MANIFEST).write_text(json.dumps(
            {name: _digest(built / f"{name}.py") for name in MODULES}, indent=1) + "\n")
    return compiled(package)
