"""The small CNN of ``examples/cnn_digits.py`` (two ``Conv2d``, ``BatchNorm2d``, ``MaxPool2d``,
``Dropout``, ``Linear``) on scikit-learn's digits: trained by numgrad with a ``DataLoader`` to at
least 97% test accuracy within the script's epochs (issue 16's acceptance: at most 30), and one
training step in float64 against PyTorch's from the same initial weights and the same dropout
mask: the loss, every gradient, the batch-norm running statistics, the parameters after an Adam
step and the eval-mode outputs, to 1e-8 relative."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import numgrad

pytest.importorskip("sklearn")

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "cnn_digits.py"
TOL = 1e-8


@pytest.fixture(scope="module")
def cnn():
    spec = importlib.util.spec_from_file_location("cnn_digits", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _close(ours, theirs, what):
    ours = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert ours.shape == theirs.shape, what
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    np.testing.assert_allclose(ours, theirs, rtol=TOL, atol=TOL * scale, err_msg=what)


def test_numgrad_reaches_97_percent(cnn):
    assert cnn.EPOCHS <= 30
    result = cnn.train(numgrad, verbose=False)
    steps_per_epoch = -(-1347 // cnn.BATCH_SIZE)  # 1,347 training images
    assert len(result["step_seconds"]) == cnn.EPOCHS * steps_per_epoch
    assert result["losses"][-1] < result["losses"][0] / 5
    assert result["accuracy"] >= 0.97, result


def test_the_same_script_trains_pytorch(cnn):
    """The code is PyTorch's: with PyTorch as the library it builds the same network and trains
    too, to numbers of its own (PyTorch's generator draws other initial weights, batches and
    dropout masks; 97.8% with PyTorch 2.13), so the bound here is a loose one."""
    assert repr(cnn.make_model(numgrad)) == repr(cnn.make_model(torch))
    result = cnn.train(torch, verbose=False)
    assert result["accuracy"] >= 0.95, result


def test_one_step_matches_pytorch_float64(cnn):
    X_train, X_test, y_train, _ = cnn.digits()
    X_train, X_test = X_train.astype(np.float64), X_test.astype(np.float64)
    numgrad.manual_seed(1)
    ours = cnn.make_model(numgrad).double()
    theirs = cnn.make_model(torch).double()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    dropout = [i for i, m in enumerate(ours) if isinstance(m, numgrad.nn.Dropout)]
    assert len(dropout) == 1 and isinstance(theirs[dropout[0]], torch.nn.Dropout)
    p = ours[dropout[0]].p

    # numgrad's batch, from its DataLoader with a seeded generator
    loader = numgrad.utils.data.DataLoader(
        numgrad.utils.data.TensorDataset(numgrad.from_numpy(X_train), numgrad.from_numpy(y_train)),
        batch_size=cnn.BATCH_SIZE, shuffle=True, generator=numgrad.Generator().manual_seed(0))
    xb, yb = next(iter(loader))
    assert xb.dtype == numgrad.float64 and tuple(xb.shape) == (cnn.BATCH_SIZE, 1, 8, 8)

    # numgrad's own dropout, its input and output kept to give PyTorch the same mask
    seen = {}
    forward = ours[dropout[0]].forward

    def keep(x):
        out = forward(x)
        seen["in"], seen["out"] = x.detach().numpy().copy(), out.detach().numpy().copy()
        return out

    ours[dropout[0]].forward = keep
    ours.train()
    optimizer = numgrad.optim.Adam(ours.parameters(), lr=cnn.LEARNING_RATE)
    optimizer.zero_grad()
    loss = numgrad.nn.CrossEntropyLoss()(ours(xb), yb)
    loss.backward()

    x, out = seen["in"], seen["out"]
    kept = x != 0
    noise = np.zeros_like(x)
    noise[kept] = out[kept] / x[kept]
    # every element is dropped (0) or scaled by 1 / (1 - p), a quarter of them dropped
    np.testing.assert_allclose(np.where(noise[kept] == 0, 1 / (1 - p), noise[kept]), 1 / (1 - p),
                               rtol=1e-12)
    assert 0.2 < np.mean(noise[kept] == 0) < 0.3
    # where the input is 0 (a pooled ReLU of zeros) the mask does not matter: the gradient
    # stops at the ReLU below

    class SameMask(torch.nn.Module):  # PyTorch's dropout with numgrad's mask
        def forward(self, x):
            return x * torch.from_numpy(noise) if self.training else x

    theirs[dropout[0]] = SameMask()
    theirs.train()
    pt_optimizer = torch.optim.Adam(theirs.parameters(), lr=cnn.LEARNING_RATE)
    pt_optimizer.zero_grad()
    pt_loss = torch.nn.CrossEntropyLoss()(theirs(torch.from_numpy(xb.numpy())),
                                          torch.from_numpy(yb.numpy()))
    pt_loss.backward()

    _close(loss, pt_loss, "loss")
    ours_params, theirs_params = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert ours_params.keys() == theirs_params.keys()
    for name, param in ours_params.items():
        _close(param.grad, theirs_params[name].grad, f"{name}.grad")
    ours_buffers, theirs_buffers = dict(ours.named_buffers()), dict(theirs.named_buffers())
    assert ours_buffers.keys() == theirs_buffers.keys()
    for name, buffer in ours_buffers.items():  # the batch norm's running statistics, updated
        _close(buffer, theirs_buffers[name], name)

    optimizer.step()
    pt_optimizer.step()
    for name, param in ours_params.items():
        _close(param, theirs_params[name], f"{name} after Adam's step")

    # eval: the running statistics normalise, dropout is the identity
    ours.eval()
    theirs.eval()
    with numgrad.no_grad():
        predicted = ours(numgrad.from_numpy(X_test))
    with torch.no_grad():
        expected = theirs(torch.from_numpy(X_test))
    _close(predicted, expected, "eval outputs")


def test_runs_as_torch_through_the_runner():
    """``python -m numgrad run examples/cnn_digits.py --torch``: ``import torch`` is numgrad."""
    env = dict(os.environ, NUMGRAD_QUIET="1")
    done = subprocess.run([sys.executable, "-m", "numgrad", "run", str(SCRIPT), "--torch",
                           "--epochs", "1"], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # (torch.__version__ there: the PyTorch numgrad follows, numgrad's own as the local label)
    assert lines[0] == f"numgrad {numgrad.torch_version.standing_in()}"
    assert any(line.startswith("test accuracy: 0.") for line in lines), done.stdout
    assert any(line.startswith("time per training step: median ") for line in lines)
