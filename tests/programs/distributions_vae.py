# A small variational autoencoder with torch.distributions: the encoder's Normal posterior drawn
# by rsample (the reparameterisation trick), a Bernoulli decoder, and the KL term by
# kl_divergence against the standard-normal prior. Written for numgrad's tests (issue 37), not
# copied: tests/test_programs.py runs it under PyTorch and under numgrad and compares every
# number it prints (the noise comes from the same generator through tests/programs/_bridge).
import torch
import torch.nn as nn
from torch.distributions import Bernoulli, Independent, Normal, kl_divergence

torch.manual_seed(0)

n_data, n_features, n_latent, n_hidden = 64, 12, 2, 24
# binary data made of two prototypes with flipped bits
prototypes = (torch.rand(2, n_features) < 0.5).float()
which = (torch.rand(n_data) < 0.5).long()
flips = (torch.rand(n_data, n_features) < 0.1).float()
data = (prototypes[which] - flips).abs()
print("data", list(data.shape), f"{data.mean().item():.6f}")


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_features, n_hidden), nn.Tanh(),
                                     nn.Linear(n_hidden, 2 * n_latent))
        self.decoder = nn.Sequential(nn.Linear(n_latent, n_hidden), nn.Tanh(),
                                     nn.Linear(n_hidden, n_features))

    def posterior(self, x):
        loc, log_scale = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(loc, log_scale.exp()), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.decoder(z)), 1)


model = VAE()
prior = Independent(Normal(torch.zeros(n_latent), torch.ones(n_latent)), 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

for step in range(60):
    q = model.posterior(data)
    z = q.rsample()
    reconstruction = model.likelihood(z).log_prob(data)
    kl = kl_divergence(q, prior)
    loss = (kl - reconstruction).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 or step == 59:
        print(f"step {step} loss {loss.item():.5f} kl {kl.mean().item():.5f} "
              f"reconstruction {reconstruction.mean().item():.5f}")

with torch.no_grad():
    q = model.posterior(data)
    print("posterior mean of the two prototypes' first points",
          [[round(v, 4) for v in q.mean[which == k][0].tolist()] for k in (0, 1)])
    print("posterior entropy", f"{q.entropy().mean().item():.5f}",
          "stddev", f"{q.stddev.mean().item():.5f}")
    # the evidence lower bound with 8 draws per point, and a Monte Carlo KL to check the
    # closed form against
    zs = q.rsample((8,))
    elbo = (model.likelihood(zs).log_prob(data) + prior.log_prob(zs) - q.log_prob(zs)).mean()
    mc_kl = (q.log_prob(zs) - prior.log_prob(zs)).mean()
    print("elbo", f"{elbo.item():.4f}", "monte carlo kl", f"{mc_kl.item():.4f}",
          "closed form", f"{kl_divergence(q, prior).mean().item():.4f}")
    decoded = model.likelihood(q.mean).mean
    print("reconstruction error", f"{((decoded > 0.5).float() - data).abs().mean().item():.4f}")
