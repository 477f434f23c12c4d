# torch.func for a physicist: forces, stiffness and normal modes of a chain of springs, a batch
# of trajectories integrated with vmap(grad(energy)), directional derivatives by jvp, linearize
# and dual tensors, a physics-informed network for the heat equation trained through nested
# grad under vmap, and a custom autograd.Function with its own vmap rule. Written for numgrad's
# tests (issue 30), not copied: tests/test_programs.py runs it under PyTorch and under numgrad
# and compares every number it prints.
import math

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import (functional_call, functionalize, grad, grad_and_value, hessian, jacfwd,
                        jacrev, jvp, linearize, vmap)

torch.manual_seed(0)

# --- a chain of six particles joined by springs, with a quartic confinement
n = 6
stiff = torch.linspace(1.0, 2.0, n - 1)


def energy(q):
    stretch = q[1:] - q[:-1] - 1.0
    return 0.5 * (stiff * stretch ** 2).sum() + 0.05 * ((q - q.mean()) ** 4).sum()


configs = torch.arange(n, dtype=torch.float32) + 0.1 * torch.randn(32, n)
forces = -vmap(grad(energy))(configs)
print("forces", list(forces.shape), f"{forces.abs().sum().item():.5f}",
      "net force ~ 0:", forces.sum(1).abs().max().item() < 1e-4)

rest = torch.arange(n, dtype=torch.float32)
K = hessian(energy)(rest)
print("stiffness", [round(v, 4) for v in K.diagonal().tolist()],
      "symmetric:", (K - K.T).abs().max().item() < 1e-6)
K2 = jacrev(jacrev(energy))(rest)
K3 = jacfwd(jacfwd(energy))(rest)
print("three ways agree:", (K - K2).abs().max().item() < 1e-5, (K - K3).abs().max().item() < 1e-5)
modes = torch.linalg.eigvalsh(K)
print("zero mode:", abs(modes[0].item()) < 1e-4,
      "frequencies", [round(math.sqrt(w), 4) for w in modes[1:].tolist()])

# the stiffness of every configuration of the batch at once
Ks = vmap(hessian(energy))(configs[:4])
print("batched stiffness", list(Ks.shape), f"{Ks.abs().sum().item():.4f}")

# --- velocity Verlet for the whole batch, the forces by vmap(grad)
force = vmap(grad(lambda q: -energy(q)))
q, p = configs.clone(), torch.zeros_like(configs)
dt = 0.05
e0 = vmap(energy)(q) + 0.5 * (p ** 2).sum(1)
f = force(q)
for step in range(40):
    p = p + 0.5 * dt * f
    q = q + dt * p
    f = force(q)
    p = p + 0.5 * dt * f
e1 = vmap(energy)(q) + 0.5 * (p ** 2).sum(1)
print("energy drift", f"{(e1 - e0).abs().max().item():.6f}", "positions", f"{q.sum().item():.4f}")

# --- directional derivatives: jvp, linearize, dual tensors
direction = torch.randn(n)
value, slope = jvp(energy, (rest + 0.1,), (direction,))
print("jvp", f"{value.item():.5f}", f"{slope.item():.5f}")
value2, slope_fn = linearize(energy, rest + 0.1)
print("linearize agrees:", abs(slope_fn(direction).item() - slope.item()) < 1e-5)
with fwAD.dual_level():
    dual = fwAD.make_dual(rest + 0.1, direction)
    moved = dual.clone()
    moved[2:4] *= 2.0  # (an in-place write into a view: its tangent follows)
    out = energy(moved)
    print("dual", f"{fwAD.unpack_dual(out).primal.item():.5f}",
          f"{fwAD.unpack_dual(out).tangent.item():.5f}",
          f"{fwAD.unpack_dual(moved).tangent.sum().item():.5f}")

# Hessian-vector product, forward over reverse, against the full Hessian
_, hvp = jvp(grad(energy), (rest + 0.1,), (direction,))
print("hvp", (hvp - hessian(energy)(rest + 0.1) @ direction).abs().max().item() < 1e-4)


def relax(q):  # (in place, as a simulation would write it; functionalize keeps callers safe)
    q = q.clone()
    for _ in range(3):
        q.sub_(0.1 * grad(energy)(q))
    return q


relaxed = vmap(functionalize(relax))(configs[:4])
print("relaxed energies", [round(v, 4) for v in vmap(energy)(relaxed).tolist()])

# --- a physics-informed network for u_t = u_xx on [0, 1] x [0, 1], u(x, 0) = sin(pi x)
net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
params = {name: p.detach() for name, p in net.named_parameters()}


def u(params, x, t):
    return functional_call(net, params, (torch.stack([x, t]).unsqueeze(0),)).squeeze()


def residual(params, x, t):
    u_t = grad(u, argnums=2)(params, x, t)
    u_xx = grad(grad(u, argnums=1), argnums=1)(params, x, t)
    return u_t - u_xx


xs, ts = torch.rand(48), torch.rand(48)
x0 = torch.linspace(0.0, 1.0, 12)


def loss(params):
    interior = vmap(residual, in_dims=(None, 0, 0))(params, xs, ts).pow(2).mean()
    start = vmap(u, in_dims=(None, 0, None))(params, x0, torch.tensor(0.0))
    initial = (start - torch.sin(math.pi * x0)).pow(2).mean()
    return interior + initial, (interior, initial)


for step in range(6):
    g, (value, (interior, initial)) = grad_and_value(loss, has_aux=True)(params)
    params = {name: p - 0.1 * g[name] for name, p in params.items()}
    print("pinn step", step, f"{value.item():.5f}", f"{interior.item():.5f}",
          f"{initial.item():.5f}")


# --- a custom Function with its own vmap rule: a smooth clamp with a hand-written derivative
class SoftClamp(torch.autograd.Function):
    @staticmethod
    def forward(x, limit):
        return limit * torch.tanh(x / limit)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, limit = inputs
        ctx.save_for_backward(x)
        ctx.limit = limit

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / torch.cosh(x / ctx.limit) ** 2, None

    @staticmethod
    def vmap(info, in_dims, x, limit):
        return SoftClamp.apply(x, limit), in_dims[0]


clamped = vmap(SoftClamp.apply, in_dims=(0, None))(forces, 0.5)
slopes = vmap(grad(lambda f: SoftClamp.apply(f, 0.5).sum()))(forces)
print("soft clamp", f"{clamped.sum().item():.5f}", f"{slopes.sum().item():.5f}")
