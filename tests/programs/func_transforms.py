# torch.func and forward-mode AD, in the style of PyTorch's tutorials on per-sample gradients,
# Jacobians and Hessians, model ensembling and forward-mode AD. Written for numgrad's tests
# (issue 30), not copied: tests/test_programs.py runs it under PyTorch and under numgrad and
# compares every number it prints.
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F
from torch.func import (functional_call, grad, hessian, jacfwd, jacrev, jvp, stack_module_state,
                        vjp, vmap)

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


# --- per-sample gradients
batch_size = 8
data = torch.randn(batch_size, 4, 4)
targets = torch.randint(10, (batch_size,))
model = SimpleMLP()


def loss_fn(predictions, targets):
    return F.nll_loss(F.log_softmax(predictions, dim=-1), targets)


def compute_grad(sample, target):
    prediction = model(sample.unsqueeze(0))
    loss = loss_fn(prediction, target.unsqueeze(0))
    return torch.autograd.grad(loss, list(model.parameters()))


looped = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
looped = [torch.stack(g) for g in zip(*looped)]

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return loss_fn(predictions, target.unsqueeze(0))


per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
for slow, (name, fast) in zip(looped, per_sample.items()):
    print(name, list(fast.shape), f"{fast.abs().sum().item():.5f}",
          f"max difference from the loop {float((slow - fast).abs().max()) < 1e-6}")

# the loss and its gradient together, with an auxiliary output
(grads, (loss, logits)) = grad_and_value = vmap(
    torch.func.grad_and_value(lambda p, x, y: (lambda out: (loss_fn(out, y.unsqueeze(0)), out))(
        functional_call(model, p, (x.unsqueeze(0),))), has_aux=True),
    in_dims=(None, 0, 0))(params, data, targets)
print("per-sample losses", [round(v, 5) for v in loss.tolist()])
print("logits", list(logits.shape), f"{logits.sum().item():.5f}")

# --- Jacobians
D = 16
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


jac_rev = jacrev(predict, argnums=2)(weight, bias, x)
jac_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
print("jacobian", list(jac_rev.shape), f"{jac_rev.sum().item():.5f}",
      f"{(jac_rev - jac_fwd).abs().max().item() < 1e-5}")

# one row by vjp, one column by jvp
unit = torch.zeros(D)
unit[3] = 1.0
_, vjp_fn = vjp(lambda x: predict(weight, bias, x), x)
(row,) = vjp_fn(unit)
_, column = jvp(lambda x: predict(weight, bias, x), (x,), (unit,))
print("row 3", [round(v, 5) for v in row[:4].tolist()])
print("column 3", [round(v, 5) for v in column[:4].tolist()])

ft_jw, ft_jb = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print("with respect to weight and bias", list(ft_jw.shape), list(ft_jb.shape),
      f"{ft_jw.abs().sum().item():.4f}", f"{ft_jb.abs().sum().item():.5f}")

xs = torch.randn(5, D)
batched = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs)
print("batched jacobians", list(batched.shape), f"{batched.sum().item():.5f}")

# --- Hessians, and Hessian-vector products two ways
hess = hessian(lambda x: predict(weight, bias, x).sum())(x)
print("hessian", list(hess.shape), f"{hess.sum().item():.5f}",
      f"symmetric {(hess - hess.T).abs().max().item() < 1e-5}")
hess2 = jacrev(jacrev(lambda x: predict(weight, bias, x).sum()))(x)
print("hessian by reverse over reverse agrees", (hess - hess2).abs().max().item() < 1e-5)

v = torch.randn(D)
scalar = lambda x: (predict(weight, bias, x) ** 2).sum()  # noqa: E731
_, hvp_forward_over_reverse = jvp(grad(scalar), (x,), (v,))
_, vjp_of_grad = vjp(grad(scalar), x)
(hvp_reverse_over_reverse,) = vjp_of_grad(v)
print("hvp", [round(a, 4) for a in hvp_forward_over_reverse[:4].tolist()],
      (hvp_forward_over_reverse - hvp_reverse_over_reverse).abs().max().item() < 1e-4)

# --- forward-mode AD with dual tensors
primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input, 1.0)
    jvp_out = fwAD.unpack_dual(dual_output).tangent
    print("dual", f"{fwAD.unpack_dual(dual_output).primal.sum().item():.4f}",
          f"{jvp_out.sum().item():.4f}")
    lin = nn.Linear(5, 5)
    input = torch.randn(16, 5)
    params = {name: p for name, p in lin.named_parameters()}
    tangents = {name: torch.rand_like(p) for name, p in params.items()}
    dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
    out = functional_call(lin, dual_params, input)
    print("module jvp", f"{fwAD.unpack_dual(out).tangent.sum().item():.4f}")

# --- model ensembling
num_models = 3
minibatches = torch.randn(num_models, 6, 4, 4)
models = [SimpleMLP() for _ in range(num_models)]
ens_params, ens_buffers = stack_module_state(models)
base_model = models[0]


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


different = vmap(fmodel)(ens_params, ens_buffers, minibatches)
same = vmap(fmodel, in_dims=(0, 0, None))(ens_params, ens_buffers, minibatches[0])
loop = torch.stack([m(minibatches[i]) for i, m in enumerate(models)])
print("ensemble", list(different.shape), f"{different.sum().item():.5f}",
      f"{same.sum().item():.5f}", (different - loop).abs().max().item() < 1e-5)

# --- neural tangent kernels, two ways
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
net_params = {k: v.detach() for k, v in net.named_parameters()}
x_train = torch.randn(5, 4)
x_test = torch.randn(2, 4)


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(params, x1, x2):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = [j.flatten(2) for j in jac1.values()]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = [j.flatten(2) for j in jac2.values()]
    return torch.stack([torch.einsum("Naf,Mbf->NMab", j1, j2)
                        for j1, j2 in zip(jac1, jac2)]).sum(0)


def empirical_ntk_ntk_vps(params, x1, x2):
    def get_ntk(x1, x2):
        def func_x1(params):
            return fnet_single(params, x1)

        def func_x2(params):
            return fnet_single(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        basis = torch.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    return vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)


ntk_a = empirical_ntk_jacobian_contraction(net_params, x_train, x_test)
ntk_b = empirical_ntk_ntk_vps(net_params, x_train, x_test)
print("ntk", list(ntk_a.shape), f"{ntk_a.sum().item():.5f}",
      (ntk_a - ntk_b).abs().max().item() < 1e-5)
