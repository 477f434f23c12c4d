"""numgrad.distributions on CUDA tensors (issue 37 item 4): parameters, draws, log_prob, KL and
gradients stay on the device and agree with the same computation on the CPU."""
import numpy as np

import numgrad
import numgrad.distributions as D


def _cuda(a):
    return numgrad.tensor(np.asarray(a, dtype=np.float32), device="cuda", requires_grad=True)


def _cpu(a):
    return numgrad.tensor(np.asarray(a, dtype=np.float32), requires_grad=True)


def _both(make, values):
    """make(convert) on CUDA and on the CPU: (its log_prob + entropy summed, the parameters'
    gradients) for each."""
    out = []
    for convert in (_cuda, _cpu):
        params = []

        def c(a, convert=convert):
            t = convert(a)
            params.append(t)
            return t

        dist = make(c)
        total = dist.log_prob(convert(values).detach()).sum() + dist.entropy().sum()
        grads = numgrad.autograd.grad(total, params)
        out.append((total, grads))
    return out


def test_normal_categorical_gamma_on_cuda_match_the_cpu():
    cases = [
        (lambda c: D.Normal(c([0.5, -1.0]), c([1.0, 2.0])), [0.3, 0.1]),
        (lambda c: D.Categorical(logits=c([[0.1, 0.5, -0.2], [1.0, 0.0, 0.3]])), [2.0, 0.0]),
        (lambda c: D.Gamma(c([0.7, 3.0]), c([1.5, 0.5])), [0.4, 2.5]),
        (lambda c: D.Bernoulli(logits=c([0.3, -1.2])), [1.0, 0.0]),
    ]
    for make, values in cases:
        (gpu_total, gpu_grads), (cpu_total, cpu_grads) = _both(make, values)
        assert gpu_total.is_cuda
        np.testing.assert_allclose(gpu_total.cpu().detach().numpy(), cpu_total.detach().numpy(),
                                   rtol=1e-5)
        for g, h in zip(gpu_grads, cpu_grads):
            assert g.is_cuda
            np.testing.assert_allclose(g.cpu().numpy(), h.numpy(), rtol=1e-4, atol=1e-6)


def test_draws_and_kl_stay_on_cuda():
    numgrad.manual_seed(0)
    loc, scale = _cuda([0.0, 1.0]), _cuda([1.0, 2.0])
    normal = D.Normal(loc, scale)
    x = normal.rsample((3,))
    assert x.is_cuda and tuple(x.shape) == (3, 2)
    x.sum().backward()
    assert loc.grad.is_cuda
    kl = D.kl_divergence(normal, D.Normal(_cuda([0.0, 0.0]), _cuda([1.0, 1.0])))
    np.testing.assert_allclose(kl.cpu().detach().numpy(),
                               [0.0, np.log(0.5) + 0.5 * (4 + 1) - 0.5], rtol=1e-5, atol=1e-6)
    assert D.Categorical(logits=_cuda([[0.1, 0.5, -0.2]])).sample((4,)).is_cuda
    assert D.Gamma(_cuda([0.5, 3.0]), 1.0).rsample((2,)).is_cuda
