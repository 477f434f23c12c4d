# Choosing an optimizer and a learning-rate schedule, tutorial style: one small network fitted to
# noisy samples of a curve with Adadelta, Adamax, NAdam, RAdam and SGD under ReduceLROnPlateau,
# OneCycleLR (per batch), SequentialLR (warm-up then cosine), ChainedScheduler and
# CosineAnnealingWarmRestarts (fractional epochs), then refined by L-BFGS with a strong-Wolfe
# line search; a checkpoint of model, optimizer and scheduler resumes a run exactly. Written for
# numgrad's tests (issue 31), not copied: tests/test_programs.py runs it under PyTorch and under
# numgrad and compares every number it prints (the data and the mini-batch order come from the
# same generator through tests/programs/_bridge). float64 throughout, so that the schedulers'
# decisions (a plateau, a line search) do not hinge on float32 roundings.
import copy

import torch
import torch.nn as nn
from torch.optim import lr_scheduler

torch.manual_seed(0)
torch.set_num_threads(1)  # tensors this small gain nothing from more threads

# noisy samples of a curve
x = torch.linspace(-2.0, 2.0, 96, dtype=torch.float64).unsqueeze(1)
y = torch.sin(2.0 * x) + 0.3 * x + 0.05 * torch.randn(96, 1).double()
print("data", list(x.shape), f"{y.mean().item():.6f} {y.std().item():.6f}")

batch_size = 16
batches_per_epoch = len(x) // batch_size
loss_fn = nn.MSELoss()


def make_model():
    torch.manual_seed(1)  # every optimizer starts from the same weights
    return nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 1)).double()


def batches(epoch):
    torch.manual_seed(100 + epoch)  # the same shuffles for every run
    order = torch.randperm(len(x))
    for i in range(batches_per_epoch):
        idx = order[i * batch_size:(i + 1) * batch_size]
        yield x[idx], y[idx]


def full_loss(model):
    with torch.no_grad():
        return loss_fn(model(x), y).item()


def train(name, model, optimizer, scheduler, epochs, per_batch=False, on_plateau=False,
          fractional=False):
    print(f"--- {name}: {type(optimizer).__name__} + {type(scheduler).__name__}")
    for epoch in range(epochs):
        for i, (xb, yb) in enumerate(batches(epoch)):
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            if per_batch:
                scheduler.step()
            elif fractional:
                scheduler.step(epoch + (i + 1) / batches_per_epoch)
        epoch_loss = full_loss(model)
        if on_plateau:
            scheduler.step(epoch_loss)
        elif not per_batch and not fractional:
            scheduler.step()
        if epoch % 5 == 4:
            group = optimizer.param_groups[0]
            extra = ""
            if "betas" in group:
                extra = f" beta1 {group['betas'][0]:.6f}"
            elif group.get("momentum"):
                extra = f" momentum {group['momentum']:.6f}"
            print(f"epoch {epoch + 1:2d} loss {epoch_loss:.6f} lr {scheduler.get_last_lr()[0]:.6e}"
                  + extra)
    return full_loss(model)


results = {}

model = make_model()
opt = torch.optim.Adadelta(model.parameters(), lr=1.0, weight_decay=1e-4)
sched = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, threshold=0.1, cooldown=2)
results["adadelta"] = train("plateau", model, opt, sched, 30, on_plateau=True)
print(f"plateau: best {sched.best:.6f}, bad epochs {sched.num_bad_epochs}, "
      f"cooldown {sched.cooldown_counter}")

model = make_model()
opt = torch.optim.NAdam(model.parameters(), lr=1e-3, momentum_decay=4e-3,
                        decoupled_weight_decay=True, weight_decay=1e-3)
sched = lr_scheduler.OneCycleLR(opt, max_lr=2e-2, epochs=30, steps_per_epoch=batches_per_epoch,
                                anneal_strategy="cos", three_phase=True)
results["nadam"] = train("one cycle", model, opt, sched, 30, per_batch=True)

model = make_model()
opt = torch.optim.RAdam(model.parameters(), lr=2e-2, decoupled_weight_decay=True,
                        weight_decay=1e-2)
warmup = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)
cosine = lr_scheduler.CosineAnnealingLR(opt, T_max=25, eta_min=1e-4)
sched = lr_scheduler.SequentialLR(opt, [warmup, cosine], milestones=[5])
results["radam"] = train("warm-up then cosine", model, opt, sched, 30)

model = make_model()
opt = torch.optim.Adamax(model.parameters(), lr=2e-2)
sched = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=4),
                                       lr_scheduler.ExponentialLR(opt, gamma=0.95)])
results["adamax"] = train("chained", model, opt, sched, 30)

model = make_model()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=2, eta_min=1e-3)
results["sgd"] = train("warm restarts", model, opt, sched, 30, fractional=True)
print("restart period now", sched.T_i, f"T_cur {sched.T_cur:.4f}")

print("ranking:", " < ".join(sorted(results, key=results.get)))

# --- refine the best first-order fit with full-batch L-BFGS
best = min(results, key=results.get)
model = make_model()
opt = torch.optim.Adamax(model.parameters(), lr=2e-2)
sched = lr_scheduler.ExponentialLR(opt, gamma=0.95)
train("warm start for L-BFGS", model, opt, sched, 10)
lbfgs = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=10, history_size=10,
                          line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss


for step in range(5):
    loss = lbfgs.step(closure)
    state = lbfgs.state[next(iter(model.parameters()))]
    print(f"L-BFGS step {step + 1} loss {loss.item():.6f} evaluations {state['func_evals']} "
          f"iterations {state['n_iter']}")
print(f"L-BFGS final {full_loss(model):.6f} (best first-order run: {best})")

# --- a checkpoint halfway resumes the run exactly


def run_radam(epochs, start=None):
    model = make_model()
    opt = torch.optim.RAdam(model.parameters(), lr=1e-2)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=3e-2, total_steps=20 * batches_per_epoch,
                                    anneal_strategy="linear")
    if start is not None:
        model.load_state_dict(start["model"])
        opt.load_state_dict(start["optimizer"])
        sched.load_state_dict(start["scheduler"])
    first = 0 if start is None else start["epoch"]
    for epoch in range(first, epochs):
        for xb, yb in batches(epoch):
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
            sched.step()
    return model, opt, sched


straight, _, _ = run_radam(20)
half, opt, sched = run_radam(10)
checkpoint = copy.deepcopy({"epoch": 10, "model": half.state_dict(),
                            "optimizer": opt.state_dict(), "scheduler": sched.state_dict()})
print("checkpoint: step", checkpoint["optimizer"]["state"][0]["step"].item(),
      "scheduler epoch", checkpoint["scheduler"]["last_epoch"],
      f"lr {checkpoint['scheduler']['_last_lr'][0]:.6e}")
resumed, _, _ = run_radam(20, checkpoint)
same = all(torch.equal(a, b) for a, b in zip(straight.parameters(), resumed.parameters()))
print("resumed equals straight:", same, f"loss {full_loss(resumed):.6f}")
