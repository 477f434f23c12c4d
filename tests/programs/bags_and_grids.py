# Two small models of the kind tutorials build, with the utilities they use along the way: a
# bag-of-words classifier on nn.EmbeddingBag (offsets, mean and sum bags, per-sample weights)
# wrapped in nn.DataParallel (one device: a pass-through whose state_dict keys say "module."),
# trained with a GradScaler on the CPU and checked through
# nn.utils.parameters_to_vector/vector_to_parameters, its embeddings stored as float16 and
# bfloat16; and a spatial-transformer step, F.affine_grid and F.grid_sample, whose rotation angle
# is learned by gradient descent. Written for numgrad's tests (issue 31), not copied:
# tests/test_programs.py runs it under PyTorch and under numgrad and compares every number it
# prints (the data comes from one generator through tests/programs/_bridge).
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)
torch.set_num_threads(1)

# ---- a bag-of-words classifier: sentences as word ids, one bag per sentence
vocab, classes = 20, 2
sentences = [[1, 4, 7], [2, 4], [9, 11, 12, 4], [13, 15], [1, 2, 3, 4, 5], [14, 16, 17], [3, 7],
             [15, 18, 19, 12]]
labels = torch.tensor([0, 0, 1, 1, 0, 1, 0, 1])
words = torch.tensor([w for s in sentences for w in s])
offsets = torch.tensor([0] + [len(s) for s in sentences[:-1]]).cumsum(0)
print("bags", len(sentences), "words", words.numel(), "offsets", offsets.tolist())


class BagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, 6, mode="mean")
        self.out = nn.Linear(6, classes)

    def forward(self, words, offsets):
        return self.out(self.bag(words, offsets))


model = nn.DataParallel(BagModel())
print("wrapped", type(model.module).__name__, sorted(model.state_dict())[:2],
      model.device_ids if model.device_ids else [])
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
for epoch in range(1, 31):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(words, offsets), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if epoch % 10 == 0:
        accuracy = (model(words, offsets).argmax(1) == labels).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.5f} accuracy {accuracy:.3f} "
              f"scale {scaler.get_scale():.1f}")

flat = parameters_to_vector(model.parameters())
print("parameters", flat.numel(), f"{flat.norm().item():.5f}")
vector_to_parameters(flat * 0.5, model.parameters())
print("halved", f"{parameters_to_vector(model.parameters()).norm().item():.5f}",
      f"{model.module.out.bias.sum().item():.5f}")

weighted = F.embedding_bag(words, model.module.bag.weight.detach(), offsets, mode="sum",
                           per_sample_weights=torch.linspace(0.5, 1.5, words.numel()))
print("weighted sums", weighted[:3].round(decimals=4))
stored = model.module.bag.weight.detach().half()
print("stored", stored.dtype, stored.nbytes, f"{(stored.float() - model.module.bag.weight).abs().max().item():.2e}",
      f"{stored.bfloat16().float().sum().item():.3f}")

# ---- a spatial-transformer step: learn the angle that rotates an image onto a target
image = torch.zeros(1, 1, 9, 9)
image[0, 0, 2:7, 3:5] = 1.0  # a bar
image[0, 0, 5:7, 3:7] = 1.0  # and a foot


def rotate(img, angle):
    c, s = torch.cos(angle), torch.sin(angle)
    zero = torch.zeros_like(angle)
    theta = torch.stack([torch.stack([c, -s, zero]), torch.stack([s, c, zero])]).unsqueeze(0)
    grid = F.affine_grid(theta, list(img.shape), align_corners=False)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


target = rotate(image, torch.tensor(math.pi / 6)).detach()
angle = torch.tensor(0.2, requires_grad=True)
opt = torch.optim.Adam([angle], lr=0.05)
for step in range(1, 41):
    opt.zero_grad()
    loss = F.mse_loss(rotate(image, angle), target)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.6f} angle {angle.item():.5f} "
              f"grad {angle.grad.item():.6f}")
print("target angle", f"{math.pi / 6:.5f}")
nearest = F.grid_sample(image, F.affine_grid(torch.tensor([[[0.8, 0.0, 0.1], [0.0, 1.2, 0.0]]]),
                                             [1, 1, 5, 5], align_corners=True),
                        mode="nearest", align_corners=True)
print("nearest", nearest[0, 0])
