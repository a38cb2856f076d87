"""``simbatch compile`` (simbatch/native.py): the Go client's engine compiled with mypyc gives
the same runs as the Python it is compiled from, and a compiled module never runs once its
source has changed.

The suite runs the package as installed: compiled after the README's setup (which runs
``simbatch compile``), as Python otherwise. Each run is compared with the other engine, in a
copy of the package run in a child process: the sources alone where the suite runs compiled,
or a compiled build made once for the module (about a minute on two cores) where it runs as
Python. The runs compared are
the CPU-on property cases (``test_properties.go_cases``, drawn with a fixed seed) and a
block of the speed benchmark's shape on the shipped models; every frame, the block time,
the processors' CPU and the scheduler's counts must be identical, not close.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simhelp import ROOT
from test_properties import go_cases

import simbatch.batching as sb
from simbatch import native

TESTS = Path(__file__).resolve().parent
_RUN = """
import json, pickle, sys
sys.path.insert(0, {tests!r})
import simbatch.batching.scheduler as scheduler
from test_native import digest
cases = pickle.load(open({cases!r}, "rb"))
print(json.dumps({{"scheduler": scheduler.__file__,
                  "runs": [digest(case, seed) for case, seed in cases]}}))
"""


def digest(case: sb.Case, seed: int) -> dict:
    """Everything a run gives, reduced to integers and exact doubles."""
    run = sb.simulate(case, seed)
    frames = {name: int(pd.util.hash_pandas_object(frame, index=True).sum())
              for name, frame in run.frames().items()}
    # as exact doubles: compiled code stores a float where Python may keep SimPy's int 0
    return {"frames": frames, "end_s": float(run.end_s).hex(),
            "go_cpu_s": float(run.go_cpu_s).hex(), "go_counts": run.go_counts}


def _why_not_compiled() -> str | None:
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed (it comes with mypy, in the dev extra)"
    if not (shutil.which("cc") or shutil.which("gcc")):
        return "no C compiler (cc or gcc) on PATH"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "Python's headers (Python.h) are not installed"
    return None


def _python(root: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def _cases() -> list[tuple[sb.Case, int]]:
    drawn: list[tuple[sb.Case, int]] = []

    @settings(max_examples=40, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case=go_cases(), seed=st.integers(0, 2**32 - 1))
    def collect(case, seed):
        drawn.append((case, seed))

    collect()
    models = ROOT / "models"
    go = tomllib.loads((models / "gobatcher-loopback.toml").read_text())["go"]
    host = tomllib.loads((models / "host-loopback.toml").read_text())["host"]
    bench = sb.Case(workload=sb.BlockWorkload(n_transactions=10_000, inputs_per_tx=3,
                                              fanout="errgroup", cap=64),
                    batcher=sb.BatcherConfig(size=100, timeout_ms=10, dispatch="pool",
                                             max_concurrent=64),
                    service=sb.ServiceConfig(fixed_us=500, is_sleep=True),
                    go=sb.GoConfig(**go, gomaxprocs=2), host=sb.HostConfig(**host))
    return [*drawn, (bench, 1)]


def _installed_is_compiled() -> bool:
    return native.compiled() == list(native.MODULES)


@pytest.fixture(scope="module")
def compiled_root(tmp_path_factory) -> Path:
    """A copy of the package with every module compiled: the installed one's extensions
    where it is compiled, else built here."""
    root = tmp_path_factory.mktemp("native")
    if _installed_is_compiled():
        shutil.copytree(native.PACKAGE.parent, root / "simbatch",
                        ignore=shutil.ignore_patterns("__pycache__"))
        return root
    why = _why_not_compiled()
    if why:
        pytest.skip(f"cannot compile here: {why}")
    built = native.build(native.copy_package(root))
    assert built == list(native.MODULES)
    return root


@pytest.fixture(scope="module")
def other_root(tmp_path_factory, request) -> Path:
    """A copy of the package running the other engine than the suite's own."""
    if _installed_is_compiled():
        root = tmp_path_factory.mktemp("python")
        native.copy_package(root)
        return root
    return request.getfixturevalue("compiled_root")


def test_the_compiled_engine_gives_the_same_runs_as_the_python_one(other_root, tmp_path):
    import simbatch.batching.scheduler as here

    cases = _cases()
    path = tmp_path / "cases.pickle"
    path.write_bytes(pickle.dumps(cases))
    done = _python(other_root, _RUN.format(tests=str(TESTS), cases=str(path)))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    compiled = tuple(EXTENSION_SUFFIXES)
    assert {out["scheduler"].endswith(compiled), str(here.__file__).endswith(compiled)} == {
        True, False}, (out["scheduler"], here.__file__)
    assert len(out["runs"]) == len(cases) >= 20
    for (case, seed), got in zip(cases, out["runs"]):
        assert got == digest(case, seed), (case, seed)


def test_version_names_the_compiled_modules_and_clean_removes_them(compiled_root, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(compiled_root, root)
    batching = root / "simbatch" / "batching"
    assert native.compiled(batching) == list(native.MODULES)
    version = _python(root, "from simbatch.cli import main; main(['--version'])")
    assert version.stdout.strip().endswith(
        f"(compiled: {', '.join(native.MODULES)})"), version
    done = _python(root, "from simbatch.cli import main; raise SystemExit(main(['compile', "
                         "'--clean']))")
    assert done.returncode == 0, done.stderr
    assert "running as Python" in done.stderr
    assert native.compiled(batching) == []
    assert not list(batching.glob(f"{native.GROUP}__mypyc*"))
    assert not (batching / native.MANIFEST).exists()


@pytest.mark.parametrize("manifest", ["none", "other source"])
def test_a_compiled_module_whose_source_changed_is_removed_before_it_loads(tmp_path,
                                                                           manifest):
    # no compiler needed: a stand-in extension file is never loaded when the check works
    batching = native.copy_package(tmp_path)
    fake = batching / f"scheduler{EXTENSION_SUFFIXES[0]}"
    fake.write_bytes(b"not a shared library")
    if manifest == "other source":
        (batching / native.MANIFEST).write_text(json.dumps({"scheduler": "0" * 64}))
    done = _python(tmp_path, "import simbatch.batching.scheduler as s; print(s.__file__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("scheduler.py")
    assert not fake.exists()
    assert f"{batching / 'scheduler.py'} is not the source its compiled module was built " \
           "from" in done.stderr
    assert "`simbatch compile` builds them again" in done.stderr


def test_a_package_with_nothing_compiled_is_left_alone(tmp_path):
    batching = native.copy_package(tmp_path)
    native.check(batching)
    assert native.compiled(batching) == []


def test_a_failed_build_says_why_and_leaves_the_package_as_it_was(tmp_path):
    why = _why_not_compiled()
    if why:
        pytest.skip(f"cannot compile here: {why}")
    batching = native.copy_package(tmp_path)
    source = batching / "gosync.py"
    source.write_text(source.read_text() + "\nBROKEN = (\n")     # mypy stops at parsing
    before = sorted(p.name for p in batching.iterdir())
    with pytest.raises(native.NativeError) as failed:
        native.build(batching)
    assert "the build failed" in str(failed.value)
    assert "simbatch/batching/gosync.py" in str(failed.value)     # mypy's line for it
    assert sorted(p.name for p in batching.iterdir()) == before
