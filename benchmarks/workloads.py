"""The workloads numgrad is judged on, written once for any module with PyTorch's API (``numgrad``
or ``torch``), with NumPy forward-only versions as the floor. ``compare.py`` and the asv suite
(``bench_workloads.py``) both run these. Each ``make(m)`` builds the inputs and returns the
function to time (forward + backward). The sizes are parameters (with the judged sizes as
defaults) so that ``gpu_check.py --small`` can rehearse them in Numba's slow CUDA simulator."""
from __future__ import annotations

import numpy as np


def seed_walkthrough(m):
    def run():
        x = m.ones(2, 2, requires_grad=True)
        y = x + 2
        out = (y * y * 3).mean()
        out.backward()
        return x.grad

    return run


def seed_walkthrough_numpy():
    def run():
        y = np.ones((2, 2), np.float32) + 2
        return (y * y * 3).mean()

    return run


def chain_200(m, length=200, n=100):
    x = m.tensor(np.linspace(-1, 1, n), dtype=m.float64, requires_grad=True)

    def run():
        y = x
        for _ in range(length):
            y = y * 1.001 + 0.001
        y.sum().backward()
        grad, x.grad = x.grad, None  # (returned: a compiled run must produce it too)
        return grad

    return run


def chain_200_effect(m, length=200, n=100):
    """``chain_200`` with a Python effect in it (a counter of the calls): ``numgrad.compile``
    takes its re-run path (the Python runs at each call, the kernel calls recorded and fused)."""
    run = chain_200(m, length, n)
    calls = [0]

    def step():
        calls[0] += 1
        return run()

    return step


def chain_200_numpy():
    x = np.linspace(-1, 1, 100)

    def run():
        y = x
        for _ in range(200):
            y = y * 1.001 + 0.001
        return y.sum()

    return run


def _normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def elementwise_1m(m, n=1_000_000):
    x = m.tensor(_normal(n), requires_grad=True)

    def run():
        (m.tanh(x * 1.5 + 0.5) * m.sigmoid(x)).sum().backward()
        grad, x.grad = x.grad, None
        return grad

    return run


def elementwise_1m_numpy():
    x = _normal(1_000_000)

    def run():
        return (np.tanh(x * np.float32(1.5) + np.float32(0.5)) / (1 + np.exp(-x))).sum()

    return run


def matmul_512(m, n=512):
    a = m.tensor(_normal((n, n), 0), requires_grad=True)
    b = m.tensor(_normal((n, n), 1), requires_grad=True)

    def run():
        (a @ b).sum().backward()
        grads = a.grad, b.grad
        a.grad = b.grad = None
        return grads

    return run


def matmul_512_numpy():
    a, b = _normal((512, 512), 0), _normal((512, 512), 1)
    return lambda: (a @ b).sum()


def mlp_step(m, batch=64, features=784, hidden=256):
    """64×784 input, 784→256 relu → 10, log-softmax loss with an integer-index gather, backward,
    SGD update (which runs under no_grad)."""
    m.manual_seed(0)
    x = m.tensor(_normal((batch, features)))
    target = m.tensor(np.random.default_rng(1).integers(0, 10, batch))
    rows = m.arange(batch)
    model = m.nn.Sequential(m.nn.Linear(features, hidden), m.nn.ReLU(), m.nn.Linear(hidden, 10))
    opt = m.optim.SGD(model.parameters(), lr=0.01)

    def run():
        loss = -model(x).log_softmax(dim=1)[rows, target].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


def mlp_step_numpy():
    rng = np.random.default_rng(0)
    x = _normal((64, 784))
    w1, b1 = _normal((784, 256), 2) * 0.03, np.zeros(256, np.float32)
    w2, b2 = _normal((256, 10), 3) * 0.06, np.zeros(10, np.float32)
    target = rng.integers(0, 10, 64)

    def run():
        z = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        return -logp[np.arange(64), target].mean()

    return run


WORKLOADS = {
    "seed walkthrough (fwd+bwd)": (seed_walkthrough, seed_walkthrough_numpy),
    "200-op chain, 100 float64 (fwd+bwd)": (chain_200, chain_200_numpy),
    "tanh(x*1.5+0.5)*sigmoid(x), 1M float32 (fwd+bwd)": (elementwise_1m, elementwise_1m_numpy),
    "(a @ b).sum(), 512x512 float32 (fwd+bwd)": (matmul_512, matmul_512_numpy),
    "MLP step 64x784 -> 256 -> 10, SGD (fwd+bwd+step)": (mlp_step, mlp_step_numpy),
}


# ---------------------------------------------------------------------- JAX, jit(grad)
# The same workloads for JAX (where installed): each a jitted function of the gradient (and, for
# the MLP, the SGD update), so that a call is one compiled XLA program, the anchor that
# numgrad.compile is compared with.
def jax_workloads():
    """{name: make()} for JAX, or {} where JAX is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)

    def seed():
        f = jax.jit(jax.grad(lambda x: ((x + 2) * (x + 2) * 3).mean()))
        return lambda: f(jnp.ones((2, 2), jnp.float32)).block_until_ready()

    def chain():
        def loss(x):
            for _ in range(200):
                x = x * 1.001 + 0.001
            return x.sum()

        f, x = jax.jit(jax.grad(loss)), jnp.asarray(np.linspace(-1, 1, 100))
        return lambda: f(x).block_until_ready()

    def elementwise():
        f = jax.jit(jax.grad(lambda x: (jnp.tanh(x * 1.5 + 0.5) * jax.nn.sigmoid(x)).sum()))
        x = jnp.asarray(_normal(1_000_000))
        return lambda: f(x).block_until_ready()

    def matmul():
        f = jax.jit(jax.grad(lambda a, b: (a @ b).sum(), argnums=(0, 1)))
        a, b = jnp.asarray(_normal((512, 512), 0)), jnp.asarray(_normal((512, 512), 1))
        return lambda: jax.block_until_ready(f(a, b))

    def mlp():
        rng = np.random.default_rng(1)
        x = jnp.asarray(_normal((64, 784)))
        target = jnp.asarray(rng.integers(0, 10, 64))
        params = [jnp.asarray(_normal(s, i) * 0.03) for i, s in
                  enumerate([(256, 784), (256,), (10, 256), (10,)], 2)]

        def loss(p):
            h = jnp.maximum(x @ p[0].T + p[1], 0)
            z = jax.nn.log_softmax(h @ p[2].T + p[3], axis=1)
            return -z[jnp.arange(64), target].mean()

        @jax.jit
        def step(p):
            g = jax.grad(loss)(p)
            return [w - 0.01 * gw for w, gw in zip(p, g)]

        state = [params]

        def run():
            state[0] = step(state[0])
            jax.block_until_ready(state[0])

        return run

    names = list(WORKLOADS)
    return dict(zip(names, (seed, chain, elementwise, matmul, mlp)))
