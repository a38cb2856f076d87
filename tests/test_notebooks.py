"""Every notebook's code cells run top to bottom (so the examples users copy stay correct)."""

from __future__ import annotations

import json

import pytest
from simhelp import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_code_cells_run(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cells = json.loads(path.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), namespace)
    assert "table" in namespace and len(namespace["table"]) == 10
