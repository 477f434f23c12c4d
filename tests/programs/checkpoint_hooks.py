# Trading compute for memory, tutorial style: what autograd keeps for backward
# (grad_fn._saved_*), hooks on those saved tensors (saved_tensors_hooks, save_on_cpu, a pack hook
# that keeps float64 activations in float32), hooks on the graph's nodes and the optimizer step
# fused into backward (register_post_accumulate_grad_hook), then activation checkpointing
# (torch.utils.checkpoint: checkpoint per block and checkpoint_sequential) training a deep
# network with the same losses as without it. Written for numgrad's tests (issue 31), not
# copied: tests/test_programs.py runs it under PyTorch and under numgrad and compares every
# number it prints (the data and the initial weights come from the same generator through
# tests/programs/_bridge). float64 throughout, so that only the float32 pack hook rounds.
import torch
import torch.nn as nn
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)
torch.set_num_threads(1)  # tensors this small gain nothing from more threads

# ---------------------------------------------------------------------------------------------
# 1. What autograd keeps for backward
#
# Every node of the graph (a tensor's grad_fn) keeps the values its backward formula needs:
# PyTorch shows them as attributes named after the operation's arguments.
x = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
w = torch.linspace(0.5, -0.5, 12, dtype=torch.float64).reshape(3, 4).requires_grad_()
h = x.mm(w)
y = torch.tanh(h)
print("h =", h.grad_fn.name(), "saved:", sorted(a for a in dir(h.grad_fn) if a.startswith("_saved_")
                                                and not a.endswith(("sym_sizes", "sym_strides"))))
print("the saved mat2 is w itself:", h.grad_fn._saved_mat2 is w)
print("saved self:", h.grad_fn._saved_self)
print("tanh keeps its result:", torch.equal(y.grad_fn._saved_result, y))
p = x.pow(3)
print("pow keeps its exponent:", p.grad_fn._saved_exponent)
s = x.sum(1)
print("sum keeps its dims:", s.grad_fn._saved_dim, "and the input's size:",
      s.grad_fn._saved_self_sym_sizes)
y.sum().backward()
try:
    y.grad_fn._saved_result
except RuntimeError as e:
    print("after backward the saved values are freed:", str(e).split(" (")[0])

# ---------------------------------------------------------------------------------------------
# 2. Hooks on the saved tensors
#
# saved_tensors_hooks(pack, unpack) sees every tensor an operation saves: pack runs in the
# forward and may return anything; unpack gets it back in the backward and returns a tensor.
# Here the activations of a small network are kept in float32 and restored to float64.
torch.manual_seed(1)
net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                    nn.Linear(16, 1)).double()
inputs = torch.randn(32, 8, dtype=torch.float64)
targets = torch.randn(32, 1, dtype=torch.float64)
loss_fn = nn.MSELoss()


def gradients(model, context=None):
    model.zero_grad()
    if context is None:
        loss = loss_fn(model(inputs), targets)
    else:
        with context:
            loss = loss_fn(model(inputs), targets)
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


events = {"pack": 0, "unpack": 0}


def pack_float32(t):
    events["pack"] += 1
    return t.dtype, t.detach().to(torch.float32)


def unpack_float32(packed):
    events["unpack"] += 1
    dtype, t = packed
    return t.to(dtype)


exact_loss, exact = gradients(net)
rounded_loss, rounded = gradients(net, saved_tensors_hooks(pack_float32, unpack_float32))
print(f"loss {exact_loss:.10f} with float32 activations {rounded_loss:.10f}")
print("every packed tensor was unpacked:", events["pack"] > 0 and events["pack"] == events["unpack"])
for i, (a, b) in enumerate(zip(exact, rounded)):
    print(f"parameter {i}: |grad| {a.norm().item():.8f}, float32 activations change it by "
          f"{(a - b).abs().max().item():.2e}")

# save_on_cpu moves saved tensors to the CPU and back (on the CPU: nothing moves), so the
# gradients are exactly the same
on_cpu_loss, on_cpu = gradients(net, save_on_cpu())
print("save_on_cpu gives the same gradients:", all(torch.equal(a, b) for a, b in zip(exact, on_cpu)))

# the hooks of one saved tensor: grad_fn._raw_saved_<name>.register_hooks
z = x.detach().requires_grad_().exp()
z.grad_fn._raw_saved_result.register_hooks(lambda t: t * 2, lambda t: t / 2)
z.sum().backward()
print("exp's gradient through a hooked saved result:", z.grad_fn.name())

# ---------------------------------------------------------------------------------------------
# 3. Hooks on the graph's nodes, and the optimizer step inside backward
torch.manual_seed(2)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).double()
out = model(inputs)
loss = loss_fn(out, targets)
node = out.grad_fn
node.metadata["layer"] = "last linear"
seen = []
node.register_prehook(lambda grad_outputs: seen.append(("before", grad_outputs[0].norm().item())))
node.register_hook(lambda grad_inputs, grad_outputs: seen.append(
    ("after", sum(g.norm().item() for g in grad_inputs if g is not None))))
print("is a graph Node:", isinstance(node, torch.autograd.graph.Node), node.metadata)
loss.backward()
for when, norm in seen:
    print(f"node hook {when} the node ran: {norm:.8f}")

# PyTorch's "optimizer step in backward" recipe: one SGD per parameter, stepped as soon as its
# gradient is accumulated, so that no gradient outlives its use
optimizers = {p: torch.optim.SGD([p], lr=0.05) for p in model.parameters()}


def step_now(param):
    optimizers[param].step()
    optimizers[param].zero_grad()


for p in model.parameters():
    p.register_post_accumulate_grad_hook(step_now)
for epoch in range(5):
    loss = loss_fn(model(inputs), targets)
    loss.backward()  # the parameters are updated during this call
    print(f"step in backward, epoch {epoch}: loss {loss.item():.10f}, grads kept: "
          f"{sum(p.grad is not None for p in model.parameters())}")

# ---------------------------------------------------------------------------------------------
# 4. Activation checkpointing
#
# checkpoint(block, x) keeps none of the block's activations: backward runs the block again to
# get them. The losses and the trained weights are the same as without it.


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(torch.tanh(self.fc1(x)))


class Deep(nn.Module):
    def __init__(self, width=16, depth=6, checkpointed=False):
        super().__init__()
        self.inp = nn.Linear(8, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.out = nn.Linear(width, 1)
        self.checkpointed = checkpointed
        self.recomputed = 0

    def run_block(self, block, h):
        if torch.is_grad_enabled():
            self.recomputed += 1
        return block(h)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        for block in self.blocks:
            if self.checkpointed:
                h = checkpoint(self.run_block, block, h, use_reentrant=False)
            else:
                h = block(h)
        return self.out(h)


def train(model, epochs=6):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(epochs):
        opt.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(3)
plain = Deep().double()
checked = Deep(checkpointed=True).double()
checked.load_state_dict(plain.state_dict())
plain_losses = train(plain)
checked_losses = train(checked)
for epoch, (a, b) in enumerate(zip(plain_losses, checked_losses)):
    print(f"epoch {epoch}: loss {a:.10f}, checkpointed {b:.10f}")
print("blocks run by the checkpointed model (forward and recomputation):", checked.recomputed)
print("same weights after training:", all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in
                                           zip(plain.parameters(), checked.parameters())))

# checkpoint_sequential splits an nn.Sequential into segments, each but the last checkpointed
torch.manual_seed(4)
seq = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(8)],
                    nn.Linear(16, 1)).double()
features = torch.randn(32, 16, dtype=torch.float64, requires_grad=True)
for segments in (1, 3):
    seq.zero_grad()
    features.grad = None
    out = checkpoint_sequential(seq, segments, features, use_reentrant=False)
    loss_fn(out, targets).backward()
    print(f"checkpoint_sequential, {segments} segment(s): output sum {out.sum().item():.10f}, "
          f"|input grad| {features.grad.norm().item():.10f}, "
          f"|first weight grad| {seq[0][0].weight.grad.norm().item():.10f}")
