# Softmax regression written the way courses and books write it, with the habits they teach:
# the setup lines (torch.accelerator, cudnn flags, determinism, matmul precision, a version
# check), a hand-made softmax with NumPy's keywords (sum(keepdims=...), argmax(axis=...)), the
# cross-entropy picked by y_hat[range(n), y], an optimizer step written with addcmul_/addcdiv_,
# the Tensor methods people reach for (new_zeros, new_full, new_tensor, type_as, view_as, stride,
# nelement, nbytes, unfold, half, bfloat16, byte, char, short, bool), printing after
# set_default_dtype(float64), and testing.assert_close. Written for numgrad's tests (issue 31),
# not copied: tests/test_programs.py runs it under PyTorch and under numgrad and compares every
# number it prints (the data comes from one generator through tests/programs/_bridge).
import torch
import torch.backends.cudnn
import torch.onnx  # noqa: F401  (present; its export is not used)

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)
torch.set_float32_matmul_precision("high")
major, minor = (int(p) for p in torch.__version__.split(".")[:2])
print("device", str(device), "deterministic", int(torch.are_deterministic_algorithms_enabled()),
      "precision", torch.get_float32_matmul_precision(), "version parts", int(major >= 0))
torch.manual_seed(0)
torch.set_num_threads(1)

# three classes of points around three centres
n_per, n_classes, n_features = 40, 3, 2
centres = torch.tensor([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
X = torch.cat([c + 0.8 * torch.randn(n_per, n_features) for c in centres]).to(device)
y = torch.arange(n_classes).repeat_interleave(n_per).to(device)
print("data", list(X.shape), X.nelement(), X.nbytes, X.stride(), y.dtype == torch.int64)


def softmax(logits):
    e = (logits - logits.max(axis=1, keepdims=True).values).exp()
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[range(len(y_hat)), y]).mean()


def accuracy(y_hat, y):
    return (y_hat.argmax(axis=1).type_as(y) == y).float().mean().item()


W = X.new_zeros((n_features, n_classes)).normal_(0, 0.01).requires_grad_()
b = X.new_zeros(n_classes, requires_grad=True)
m = [W.new_zeros(W.shape), b.new_zeros(b.shape)]
v = [W.new_full(W.shape, 0.0), b.new_full(b.shape, 0.0)]
lr, beta1, beta2, eps = 0.1, 0.9, 0.999, 1e-8
for step in range(1, 61):
    y_hat = softmax(X @ W + b)
    loss = cross_entropy(y_hat, y)
    loss.backward()
    with torch.no_grad():  # Adam by hand, as the optimizer chapters write it
        for p, m_p, v_p in zip((W, b), m, v):
            m_p.mul_(beta1).add_(p.grad, alpha=1 - beta1)
            v_p.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (v_p / (1 - beta2 ** step)).sqrt_().add_(eps)
            p.addcdiv_(m_p, denom, value=-lr / (1 - beta1 ** step))
            p.grad.zero_()
    if step % 15 == 0:
        print(f"step {step} loss {loss.item():.5f} accuracy {accuracy(y_hat, y):.4f}")

# the Tensor methods of the chapters on data
probs = softmax(X @ W + b).detach()
print("rows sum to", probs.sum(axis=1, keepdims=True).view_as(b.new_tensor([[1.0]] * len(X)))
      .mean().item())
print("half", probs[:2].half(), probs[:2].half().nbytes)
print("bfloat16", probs[:2].bfloat16().float())
print("byte char short bool", (probs[:3] * 250).byte().tolist(), (probs[:3] * 120).char().tolist(),
      (probs[:3] * 30000).short().tolist(), probs[:3].gt(0.5).bool().tolist())
windows = probs[:, 0].unfold(0, 10, 10)  # ten-point averages of the first class's probability
print("windows", list(windows.shape), windows.stride(), windows.mean(axis=1)[:6])
print("predicted counts", torch.bincount(probs.argmax(axis=1), minlength=n_classes).tolist())

torch.set_default_dtype(torch.float64)
print(torch.tensor([1.5, 2.25]), torch.tensor([1.5, 2.25], dtype=torch.float32))
print(W.detach().double().round(decimals=3))
torch.set_default_dtype(torch.float32)
print(torch.tensor([0.5]), torch.tensor([0.5], dtype=torch.float64))

torch.testing.assert_close(probs.sum(axis=1), torch.ones(len(X)))
try:
    torch.testing.assert_close(probs[:2, 0], torch.zeros(2))
except AssertionError as e:
    print("assert_close:", str(e).splitlines()[0])
