"""PyTorch code run as it is: ``python -m numgrad run script.py`` and
``numgrad.install_as_torch()`` make ``import torch`` (and ``torch.X``) give numgrad."""
import os
import subprocess
import sys

import pytest

import numgrad

SCRIPT = '''
import sys
import torch
from torch import nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)
x = Variable(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
layer = nn.Linear(2, 1)
with torch.no_grad():
    layer.weight.copy_(torch.tensor([[0.5, -0.25]]))
    layer.bias.fill_(0.1)
loss = F.mse_loss(layer(x).squeeze(1), torch.tensor([1.0, 2.0]))
loss.backward()
print(f"{loss:.6f}", sys.argv[1:])
print([round(v, 6) for v in x.grad.reshape(-1).tolist()])
print([round(v, 6) for v in layer.weight.grad.reshape(-1).tolist()], type(torch.ones(1)).__module__.split(".")[0])
version = torch.__version__  # (a program's version checks: the modern path, as on PyTorch 2.13)
print(version >= "2.0", version >= (2, 0), version > "2.2", version < "3", version.split("+")[0],
      torch.version.__version__ == version)
'''


def test_run_gives_a_pytorch_script_numgrad_and_the_same_numbers(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, NUMGRAD_QUIET="1")
    ours = subprocess.run([sys.executable, "-m", "numgrad", "run", str(script), "--lr", "1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert ours.returncode == 0, ours.stderr
    theirs = subprocess.run([sys.executable, str(script), "--lr", "1"], capture_output=True,
                            text=True, env=env, timeout=300)
    assert theirs.returncode == 0, theirs.stderr
    ours_lines, theirs_lines = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert ours_lines[:2] == theirs_lines[:2]
    assert ours_lines[2].rsplit(" ", 1) == [theirs_lines[2].rsplit(" ", 1)[0], "numgrad"]
    assert theirs_lines[2].endswith(" torch")
    assert ours_lines[3] == theirs_lines[3] == "True True True True 2.13.0 True"


def test_version_compares_by_its_numbers_as_pytorchs():
    from torch.torch_version import TorchVersion as Theirs

    from numgrad.torch_version import TorchVersion as Ours

    assert type(numgrad.__version__) is Ours and numgrad.__version__ == "0.1.0"
    for version in ("0.1.0", "2.13.0+cpu", "2.13.0+numgrad.0.1.0", "1.12.1", "2.2", "2.14.0a0",
                    "2.14.0.dev20261201+cpu", "2.13.0rc1"):
        for other in ("2", "2.0", "2.2", "2.13", "2.13.0", "2.13.0+cpu", "2.14", "2.14.0a0",
                      "2.14.0.dev1", "1.9.0", "0.1", "10.0", (2, 0), (2, 13, 0), (1, 12), [2, 2]):
            for op in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__"):
                mine, want = getattr(Ours(version), op)(other), getattr(Theirs(version), op)(other)
                assert mine == want, (version, op, other)
    assert isinstance(Ours("2.13.0"), str) and hash(Ours("2.13.0")) == hash("2.13.0")


def test_install_refuses_once_the_real_pytorch_is_imported():
    import torch  # noqa: F401 (the real one, imported by this test process)

    with pytest.raises(RuntimeError, match="the real PyTorch is already imported"):
        numgrad.install_as_torch()


def test_a_torch_module_numgrad_lacks_is_named(tmp_path):
    script = tmp_path / "dist.py"
    script.write_text("import torch._inductor\n")
    run = subprocess.run([sys.executable, "-m", "numgrad", "run", str(script)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "No module named 'torch._inductor': numgrad, standing in for PyTorch" in run.stderr
    assert "stands in for PyTorch" in run.stderr  # (what it did, said once)
