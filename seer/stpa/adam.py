"""Adam for training with torch on free-threaded CPython: torch's own update, without
``torch.optim.Adam``.

Constructing any ``torch.optim`` optimizer imports ``torch._dynamo`` (its
``add_param_group`` is wrapped in ``torch._disable_dynamo``), and ``torch._dynamo`` imports
triton when it is installed, whose extension ``triton._C.libtriton`` re-enables the GIL on a
3.14t build (``torch.use_deterministic_algorithms`` does the same; ``TORCHDYNAMO_DISABLE=1``
does not help, measured on torch 2.14.1 and 2.15.0, docs/training.md). The functional
update ``torch.optim.adam.adam`` that ``torch.optim.Adam`` calls, and
``torch.nn.utils.clip_grad_norm_``, import neither, so this class holds Adam's state and
calls them: the numbers are torch's single-tensor Adam's. STPA's encoder and the MAPPO
example train with it. torch is imported on first use, so importing this module costs
nothing where the ``stpa`` extra is not installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Adam"]


class Adam:
    """Adam over ``params`` (tensors with ``.grad``): ``torch.optim.Adam(params, lr, betas,
    eps, foreach=False)`` without weight decay or amsgrad, except that one step count ``t``
    serves every parameter (a parameter without a gradient is skipped, as torch skips it).
    ``max_grad_norm``: clip the gradients' global L2 norm to it before the update, in
    place, with ``torch.nn.utils.clip_grad_norm_`` (None: no clipping). :meth:`step`
    returns that norm before clipping."""

    def __init__(self, params: list[Any], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, max_grad_norm: float | None = None) -> None:
        import torch

        self.params = params
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.max_grad_norm = max_grad_norm
        self.m = [torch.zeros_like(p) for p in params]  # exp_avg
        self.v = [torch.zeros_like(p) for p in params]  # exp_avg_sq
        self.t = 0
        # torch's per-parameter step counters, set from t before each update
        self._steps = [torch.zeros((), dtype=torch.float32) for _ in params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> float:
        """One update; returns the gradients' global norm before clipping."""
        import torch
        from torch.nn.utils import clip_grad_norm_, get_total_norm
        from torch.optim.adam import adam

        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        self.t += 1
        if not live:
            return 0.0
        params = [self.params[i] for i in live]
        grads = [p.grad for p in params]
        if self.max_grad_norm is None:
            norm = get_total_norm(grads, foreach=False)
        else:
            norm = clip_grad_norm_(params, self.max_grad_norm, foreach=False)
        steps = [self._steps[i].fill_(self.t - 1) for i in live]  # adam adds the 1
        with torch.no_grad():
            adam(params, grads, [self.m[i] for i in live],
                 [self.v[i] for i in live], [], steps, foreach=False, amsgrad=False,
                 beta1=self.b1, beta2=self.b2, lr=self.lr, weight_decay=0.0, eps=self.eps,
                 maximize=False)
        return float(norm)

    def state_dict(self) -> dict[str, Any]:
        """The step count, moments and learning rate (for checkpoints)."""
        return {"t": self.t, "m": [m.clone() for m in self.m],
                "v": [v.clone() for v in self.v], "lr": self.lr}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t, self.lr = int(state["t"]), float(state["lr"])
        for dst, src in zip(self.m + self.v, state["m"] + state["v"], strict=True):
            dst.copy_(src)
