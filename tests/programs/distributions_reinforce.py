# REINFORCE (a policy gradient) with torch.distributions.Categorical: a softmax policy on a short
# chain of states learns to walk right; the loss is -log_prob(action) * return minus an entropy
# bonus. Written for numgrad's tests (issue 37), not copied: tests/test_programs.py runs it under
# PyTorch and under numgrad and compares every number it prints. The actions are drawn by
# inverting the policy's cdf at uniforms from torch.rand (the same numbers in both runs, through
# tests/programs/_bridge), not by Categorical.sample.
import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(0)

n_states, n_actions, horizon, n_envs, gamma = 6, 3, 8, 16, 0.9
policy = nn.Sequential(nn.Linear(n_states, 32), nn.ReLU(), nn.Linear(32, n_actions))
optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)


def step_env(state, action):
    """Actions: 0 left, 1 stay, 2 right. Reward 1 on reaching the last state (then stay)."""
    moved = (state + action - 1).clamp(0, n_states - 1)
    reward = (moved == n_states - 1).float()
    return moved, reward


def choose(dist):
    """The action whose cdf interval holds a uniform draw (inversion sampling)."""
    u = torch.rand(dist.batch_shape)
    cdf = dist.probs.cumsum(-1)
    return (cdf < u.unsqueeze(-1)).sum(-1).clamp(max=n_actions - 1)


for episode in range(30):
    state = torch.zeros(n_envs, dtype=torch.long)
    log_probs, entropies, rewards = [], [], []
    for t in range(horizon):
        dist = Categorical(logits=policy(nn.functional.one_hot(state, n_states).float()))
        action = choose(dist)
        log_probs.append(dist.log_prob(action))
        entropies.append(dist.entropy())
        state, reward = step_env(state, action)
        rewards.append(reward)
    returns, running = [], torch.zeros(n_envs)
    for reward in reversed(rewards):
        running = reward + gamma * running
        returns.insert(0, running)
    returns = torch.stack(returns)
    advantage = returns - returns.mean(1, keepdim=True)
    log_probs, entropies = torch.stack(log_probs), torch.stack(entropies)
    loss = -(log_probs * advantage).mean() - 0.01 * entropies.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if episode % 5 == 0 or episode == 29:
        print(f"episode {episode} return {returns[0].mean().item():.5f} "
              f"loss {loss.item():.6f} entropy {entropies.mean().item():.5f}")

with torch.no_grad():
    states = torch.arange(n_states)
    dist = Categorical(logits=policy(nn.functional.one_hot(states, n_states).float()))
    print("greedy actions", dist.mode.tolist())
    print("P(right)", [round(p, 4) for p in dist.probs[:, 2].tolist()])
    print("log_prob of going right", [round(v, 4) for v in
                                       dist.log_prob(torch.full((n_states,), 2)).tolist()])
    print("enumerate_support", list(dist.enumerate_support().shape),
          "perplexity", f"{dist.perplexity().mean().item():.5f}")
