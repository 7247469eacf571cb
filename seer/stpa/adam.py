"""Adam (Kingma & Ba), written out, for training with torch on free-threaded CPython.

``torch.optim`` cannot be used there: constructing one of its optimizers imports
``torch._dynamo`` and with it triton, whose extension re-enables the GIL on a 3.14t build
(``torch.use_deterministic_algorithms`` does the same). STPA's encoder and the MAPPO
example train with this one instead. torch is imported on first use, so importing this
module costs nothing where the ``stpa`` extra is not installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Adam"]


class Adam:
    """Adam over ``params`` (tensors with ``.grad``), as ``torch.optim.Adam`` without weight
    decay or amsgrad. ``max_grad_norm``: clip the gradients' global L2 norm to it before
    the update (None: no clipping). :meth:`step` returns that norm before clipping."""

    def __init__(self, params: list[Any], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, max_grad_norm: float | None = None) -> None:
        import torch

        self.params = params
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.max_grad_norm = max_grad_norm
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> float:
        """One update; returns the gradients' global norm before clipping."""
        import torch

        grads = [p.grad for p in self.params if p.grad is not None]
        norm = float(torch.sqrt(sum(g.square().sum() for g in grads))) if grads else 0.0
        scale = 1.0
        if self.max_grad_norm is not None and norm > self.max_grad_norm:
            scale = self.max_grad_norm / (norm + 1e-6)
        self.t += 1
        c1 = 1.0 - self.b1**self.t
        c2 = 1.0 - self.b2**self.t
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                g = p.grad if scale == 1.0 else p.grad * scale
                m.mul_(self.b1).add_(g, alpha=1.0 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1.0 - self.b2)
                denom = (v / c2).sqrt_().add_(self.eps)
                p.addcdiv_(m, denom, value=-self.lr / c1)
        return norm

    def state_dict(self) -> dict[str, Any]:
        """The step count, moments and learning rate (for checkpoints)."""
        return {"t": self.t, "m": [m.clone() for m in self.m],
                "v": [v.clone() for v in self.v], "lr": self.lr}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t, self.lr = int(state["t"]), float(state["lr"])
        for dst, src in zip(self.m + self.v, state["m"] + state["v"], strict=True):
            dst.copy_(src)
