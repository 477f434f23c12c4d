"""``examples/numgrad_tour.ipynb`` runs from top to bottom, in this interpreter, on this numgrad."""
import ast
import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import numgrad

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "numgrad_tour.ipynb"

# Appended to the copy that runs (not to the file): where the kernel found numgrad and Python.
_WHERE = "import sys, numgrad\nprint(repr((numgrad.__file__, sys.prefix)))"


def _outputs(cell) -> str:
    text = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            text.append(out.text)
        elif "data" in out:
            text.append(out.data.get("text/plain", ""))
    return "".join(text)


def test_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.fixture
def python3_kernel(tmp_path, monkeypatch):
    """A ``python3`` kernel spec that runs this interpreter, first on Jupyter's search path, and a
    PYTHONPATH that gives the kernel the numgrad these tests import (the checkout's ``src`` or
    the installed package)."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (numgrad tests)",
        "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    package_root = str(Path(numgrad.__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [package_root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the plots
    return "python3"


def test_notebook_runs_top_to_bottom(python3_kernel):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_WHERE))
    client = NotebookClient(nb, timeout=300, kernel_name=python3_kernel,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError, with the traceback, if a cell fails

    errors = [out for cell in nb.cells for out in cell.get("outputs", [])
              if out.output_type == "error"]
    assert not errors

    numgrad_file, prefix = ast.literal_eval(_outputs(nb.cells[-1]))
    assert Path(numgrad_file).resolve() == Path(numgrad.__file__).resolve()
    assert Path(prefix).resolve() == Path(sys.prefix).resolve()

    text = "\n".join(_outputs(cell) for cell in nb.cells)
    accuracy = re.search(r"^test accuracy: (\d\.\d+)$", text, re.M)
    assert accuracy, "the notebook prints `test accuracy: 0.xxxx`"
    assert float(accuracy[1]) >= 0.95
    assert re.search(r"^  numgrad: \d+\.\d+ s", text, re.M)
    assert re.search(r"^  PyTorch: \d+\.\d+ s", text, re.M) or "PyTorch is not installed" in text
    # the training step compiled (issue 13): eager's losses, both times per step
    diff = re.search(r"^largest difference between the eager and compiled losses: (\S+)$", text,
                     re.M)
    assert diff and float(diff[1]) == 0.0
    assert re.search(r"^median time per step: eager \d+ µs, compiled \d+ µs", text, re.M)
    # the CNN of examples/cnn_digits.py (issue 16's acceptance), timed beside PyTorch
    cnn = re.search(r"^  numgrad: test accuracy (\d\.\d+), \d+\.\d+ ms per step \(median\)$", text,
                    re.MULTILINE)
    assert cnn, "the notebook prints the CNN's `  numgrad: test accuracy 0.xxxx, ...`"
    assert float(cnn[1]) >= 0.97
    assert (re.search(r"^  PyTorch: test accuracy \d\.\d+, \d+\.\d+ ms per step \(median\)$", text,
                      re.MULTILINE) or "  PyTorch: not installed" in text)

    pictures = [out for cell in nb.cells if "make_dot(" in cell.source
                for out in cell.outputs if out.output_type in ("display_data", "execute_result")]
    assert len(pictures) == 4
    if shutil.which("dot"):
        assert all("<svg" in out.data["image/svg+xml"] for out in pictures)
    else:
        assert all("pip install graphviz" in out.data["text/plain"] for out in pictures)
    assert sum("image/png" in out.get("data", {}) for cell in nb.cells
               for out in cell.get("outputs", [])) == 2  # the digits and the loss curve
