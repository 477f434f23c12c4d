"""AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the update)."""
from __future__ import annotations

from .adam import Adam


class AdamW(Adam):
    """PyTorch's AdamW: :class:`Adam` with ``decoupled_weight_decay=True`` (always, also after
    ``load_state_dict``) and a default ``weight_decay`` of 1e-2; update for update PyTorch's::

        t += 1;  p = p * (1 - lr * weight_decay)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        (amsgrad: v_max = max(v_max, v), used for v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
