"""Every notebook runs top to bottom on a real Jupyter kernel (nbclient) and shows at least
one figure, so the examples users copy stay correct."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from simhelp import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_one_notebook_per_question_family():
    assert {p.stem[0] for p in NOTEBOOKS} >= set("abcde")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_a_kernel_and_shows_a_figure(path):
    book = nbformat.read(path, as_version=4)
    NotebookClient(book, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure shown"
    assert any("Takeaway" in cell.source for cell in book.cells if cell.cell_type == "markdown")
