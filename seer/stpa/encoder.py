"""A TimesURL-style temporal encoder for STPA preflight features.

A preflight yields ``F`` of shape ``(N, T, 3)``: N per-thread metrics sampled over T steps
(``T_pre``, 8 by default), aggregated across threads into mean, variance and range.
:func:`flatten_preflight` turns one or many of them into the encoder's input ``x`` of shape
``(n, T, C)`` with ``C = N * 3`` channels, channel ``3 * metric + stat``. The encoder maps
``x`` to one embedding per preflight, ``(n, repr_dims)``, which the STPA regressor reads
together with the static features.

Architecture (TS2Vec's dilated convolution encoder, shrunk for T ~ 8):

* a fixed transform ``sign(x) * log1p(|x|)`` (``log_inputs``; the metrics span orders of
  magnitude, e.g. cycle variances), then per-channel standardisation with the mean and
  standard deviation of the training set; both are part of the model, so inference takes
  raw features. Channels marked missing by an optional ``mask`` are set to 0 *after*
  standardisation (the training mean);
* a linear input projection ``C -> hidden_dims`` per time step;
* ``depth`` residual blocks ``h + conv2(gelu(conv1(gelu(h))))``, both convolutions of
  kernel 3 with dilation ``2**i`` in block ``i`` and "same" zero padding (GELU is the tanh
  form, so that the numpy forward reproduces it exactly);
* a linear projection ``hidden_dims -> repr_dims`` per time step, giving ``(n, T, repr_dims)``;
* max pooling over time: the embedding ``(n, repr_dims)``.

Self-supervised training (:meth:`TimesURLEncoder.fit`) minimises
``L = L_dual + alpha * L_recon`` on mini-batches:

* two views of each series: a crop of the series, and a crop of its *frequency-mixed*
  version (TimesURL's FreqMix: the real FFT over time, a random fraction ``mix_rate`` of the
  frequency components replaced by those of another series of the batch, the inverse FFT;
  the DC and the dominant component of each channel are kept, so that the level of a metric,
  the information STPA most needs, is not mixed away). The crops are TS2Vec's two
  overlapping sub-windows at a random offset; only their overlap (of length >= 2, or T when
  T < 2) is compared, so that the representation of a time step must not depend on how
  much context the window gives it (contextual consistency);
* ``L_dual`` is TS2Vec's hierarchical contrastive loss on the overlap: at each scale (the
  overlap max-pooled by 2 until one step is left) the mean of an *instance* term (the same
  series in the other view is the positive, the other series of the batch in both views are
  negatives) and a *temporal* term (the same time step in the other view is the positive,
  the other time steps of the same series in both views are negatives), averaged over the
  scales; similarities are dot products, as in TS2Vec;
* ``L_recon`` is TimesURL's time reconstruction: random time steps of the (standardised)
  input are zeroed (``mask_rate``, at least one per series), the per-step representations of
  the masked input are decoded back to the input by a linear decoder ``repr_dims -> C``,
  and the loss is the mean squared error on the masked steps.

The numpy forward :func:`numpy_encode` works from :meth:`TimesURLEncoder.export`'s arrays
(or :func:`load_weights` of a ``.npz`` written by :meth:`TimesURLEncoder.save`) and never
imports torch: ``threads="auto"`` needs numpy only. torch is imported lazily, by the
training and torch-forward code only.

Free-threading: constructing a ``torch.optim`` optimizer and
``torch.use_deterministic_algorithms`` import ``torch._dynamo`` and with it triton, whose
extension re-enables the GIL on a 3.14t build; training therefore uses
:class:`seer.stpa.adam.Adam` (torch's functional Adam update, without the optimizer class)
and sets the deterministic flag through torch's underlying setter.
:meth:`TimesURLEncoder.fit` changes process-wide torch state (one thread, deterministic
algorithms, the seeded global RNG), restores it afterwards, and holds a lock, so one fit
runs at a time in a process.

Sizes (defaults, C = 54): about 22k parameters; 40 epochs on 300 preflights train in about
9 s on one thread; :func:`numpy_encode` takes about 0.5 ms per preflight.

References: Liu & Chen, "TimesURL: Self-supervised Contrastive Learning for Universal Time
Series Representation Learning", AAAI 2024; Yue et al., "TS2Vec: Towards Universal
Representation of Time Series", AAAI 2022.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from seer.stpa.adam import Adam

if TYPE_CHECKING:
    import torch

__all__ = [
    "FORMAT_VERSION",
    "EncoderConfig",
    "TimesURLEncoder",
    "channel_mask",
    "flatten_preflight",
    "load_weights",
    "numpy_encode",
]

#: Version of the exported weight layout (``weights["config"][0]``).
FORMAT_VERSION = 1

_STD_FLOOR = 1e-6
_GELU_C = math.sqrt(2.0 / math.pi)

# fit() changes process-wide torch settings (thread count, deterministic algorithms, the
# global RNG, restored afterwards): one fit at a time in this process.
_FIT_LOCK = threading.Lock()


@dataclass(frozen=True)
class EncoderConfig:
    """The encoder's shape. ``in_dims`` is C = N * 3."""

    in_dims: int
    hidden_dims: int = 32
    depth: int = 3
    repr_dims: int = 16
    kernel_size: int = 3
    log_inputs: bool = True

    def __post_init__(self) -> None:
        for name in ("in_dims", "hidden_dims", "repr_dims", "kernel_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.depth < 0:
            raise ValueError(f"depth must be >= 0, got {self.depth}")
        if self.kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd ('same' padding), got {self.kernel_size}")

    def to_array(self) -> np.ndarray:
        return np.array([FORMAT_VERSION, self.in_dims, self.hidden_dims, self.depth,
                         self.repr_dims, self.kernel_size, int(self.log_inputs)], np.int64)

    @classmethod
    def from_array(cls, a: np.ndarray) -> EncoderConfig:
        a = np.asarray(a).astype(np.int64).ravel()
        if a.size < 1 or int(a[0]) != FORMAT_VERSION:
            raise ValueError(f"unsupported encoder weight format {a[:1].tolist()} "
                             f"(expected {FORMAT_VERSION})")
        if a.size != 7:
            raise ValueError(f"malformed encoder config array of length {a.size}")
        return cls(in_dims=int(a[1]), hidden_dims=int(a[2]), depth=int(a[3]),
                   repr_dims=int(a[4]), kernel_size=int(a[5]), log_inputs=bool(a[6]))


# --------------------------------------------------------------------------- input helpers


def flatten_preflight(features: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Preflight features ``(N, T, 3)`` or ``(n, N, T, 3)`` -> encoder input ``(n, T, N*3)``,
    channel ``3 * metric + stat``. Metrics whose ``mask`` (``(N,)`` or ``(n, N)``) is False
    and non-finite values become 0."""
    f = np.asarray(features, dtype=np.float32)
    if f.ndim == 3:
        f = f[None]
    if f.ndim != 4:
        raise ValueError(f"features must be (N, T, S) or (n, N, T, S), got shape {f.shape}")
    n, n_metrics, t, s = f.shape
    f = np.where(np.isfinite(f), f, np.float32(0))
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), (n, n_metrics))
        f = np.where(m[:, :, None, None], f, np.float32(0))
    return np.ascontiguousarray(f.transpose(0, 2, 1, 3).reshape(n, t, n_metrics * s))


def channel_mask(mask: np.ndarray, stats: int = 3) -> np.ndarray:
    """A metric mask ``(..., N)`` -> the channel mask ``(..., N*stats)`` of
    :func:`flatten_preflight`'s layout."""
    return np.repeat(np.asarray(mask, dtype=bool), stats, axis=-1)


def _check_input(x: np.ndarray, in_dims: int, dtype: type) -> np.ndarray:
    a = np.asarray(x, dtype=dtype)
    if a.ndim != 3:
        raise ValueError(f"x must be (n, T, C), got shape {a.shape}")
    if a.shape[2] != in_dims:
        raise ValueError(f"x has {a.shape[2]} channels, the encoder expects {in_dims}")
    if a.shape[1] < 1:
        raise ValueError("x needs at least one time step")
    return a


def _check_mask(mask: np.ndarray | None, n: int, in_dims: int) -> np.ndarray | None:
    """Channel mask ``(C,)`` or ``(n, C)`` -> ``(n, C)`` bool, or None."""
    if mask is None:
        return None
    m = np.asarray(mask, dtype=bool)
    if m.shape not in ((in_dims,), (n, in_dims)):
        raise ValueError(f"mask must be ({in_dims},) or ({n}, {in_dims}), got {m.shape}")
    return np.broadcast_to(m, (n, in_dims))


def _log_np(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


# --------------------------------------------------------------------------- numpy forward


def _gelu_np(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x**3)))


def _conv_np(h: np.ndarray, w: np.ndarray, b: np.ndarray, dilation: int) -> np.ndarray:
    """Conv1d with 'same' zero padding on time-major ``h`` (n, T, I); ``w`` is torch's
    ``(O, I, K)``."""
    k = w.shape[2]
    t = h.shape[1]
    pad = dilation * (k - 1) // 2
    hp = np.pad(h, ((0, 0), (pad, pad), (0, 0)))
    out = np.broadcast_to(b, (h.shape[0], t, w.shape[0])).copy()
    for j in range(k):
        out += hp[:, j * dilation: j * dilation + t, :] @ w[:, :, j].T
    return out


def numpy_encode(weights: Mapping[str, np.ndarray], x: np.ndarray,
                 mask: np.ndarray | None = None) -> np.ndarray:
    """Embeddings ``(n, repr_dims)`` (float32) of raw inputs ``x`` ``(n, T, C)`` from exported
    weights (:meth:`TimesURLEncoder.export` or :func:`load_weights`), in numpy only (float64
    inside). ``mask``: optional channel mask ``(C,)`` or ``(n, C)``, False = missing."""
    cfg = EncoderConfig.from_array(weights["config"])
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items() if k != "config"}
    a = _check_input(x, cfg.in_dims, np.float64)
    m = _check_mask(mask, a.shape[0], cfg.in_dims)
    if cfg.log_inputs:
        a = _log_np(a)
    h = (a - w["norm_mean"]) / w["norm_std"]
    if m is not None:
        h = h * m[:, None, :]
    h = h @ w["input_fc.weight"].T + w["input_fc.bias"]
    for i in range(cfg.depth):
        d = 2**i
        p = f"blocks.{i}."
        y = _conv_np(_gelu_np(h), w[p + "conv1.weight"], w[p + "conv1.bias"], d)
        y = _conv_np(_gelu_np(y), w[p + "conv2.weight"], w[p + "conv2.bias"], d)
        h = h + y
    z = h @ w["output_fc.weight"].T + w["output_fc.bias"]
    return z.max(axis=1).astype(np.float32)


def load_weights(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of a ``.npz`` written by :meth:`TimesURLEncoder.save` (no torch needed)."""
    with np.load(Path(path), allow_pickle=False) as z:
        weights = {k: np.array(z[k]) for k in z.files}
    EncoderConfig.from_array(weights["config"])  # validates the format
    return weights


# --------------------------------------------------------------------------- torch model


@functools.cache
def _net_class() -> type:
    """The torch module class (defined on first use, so that importing this module does
    not import torch)."""
    import torch
    from torch import nn

    class _Block(nn.Module):
        def __init__(self, channels: int, kernel_size: int, dilation: int) -> None:
            super().__init__()
            pad = dilation * (kernel_size - 1) // 2
            self.conv1 = nn.Conv1d(channels, channels, kernel_size, padding=pad,
                                   dilation=dilation)
            self.conv2 = nn.Conv1d(channels, channels, kernel_size, padding=pad,
                                   dilation=dilation)
            self.act = nn.GELU(approximate="tanh")

        def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, H, T)
            return h + self.conv2(self.act(self.conv1(self.act(h))))

    class _Net(nn.Module):
        def __init__(self, cfg: EncoderConfig) -> None:
            super().__init__()
            self.cfg = cfg
            self.register_buffer("norm_mean", torch.zeros(cfg.in_dims))
            self.register_buffer("norm_std", torch.ones(cfg.in_dims))
            self.input_fc = nn.Linear(cfg.in_dims, cfg.hidden_dims)
            self.blocks = nn.ModuleList(
                _Block(cfg.hidden_dims, cfg.kernel_size, 2**i) for i in range(cfg.depth))
            self.output_fc = nn.Linear(cfg.hidden_dims, cfg.repr_dims)
            self.decoder = nn.Linear(cfg.repr_dims, cfg.in_dims)  # training only

        def normalize(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            if self.cfg.log_inputs:
                x = torch.sign(x) * torch.log1p(torch.abs(x))
            x = (x - self.norm_mean) / self.norm_std
            if mask is not None:
                x = x * mask[:, None, :]
            return x

        def steps(self, xn: torch.Tensor) -> torch.Tensor:
            """Standardised (B, T, C) -> per-step representations (B, T, repr_dims)."""
            h = self.input_fc(xn).transpose(1, 2)
            for block in self.blocks:
                h = block(h)
            return self.output_fc(h.transpose(1, 2))

        def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            return self.steps(self.normalize(x, mask)).amax(dim=1)

    return _Net


@contextlib.contextmanager
def _fit_settings(seed: int) -> Iterator[None]:
    """One thread, deterministic algorithms, the global torch RNG seeded; all restored.

    The deterministic flag is set through ``torch._C._set_deterministic_algorithms``, what
    ``torch.use_deterministic_algorithms`` does besides importing ``torch._inductor``: that
    import pulls in triton, whose extension re-enables the GIL on a free-threaded build.
    Without the private setter (a future torch), the flag is left alone: on one CPU thread
    the operations used here are deterministic anyway."""
    import torch

    set_det = getattr(torch._C, "_set_deterministic_algorithms", None)
    with _FIT_LOCK, torch.random.fork_rng(devices=[]):
        threads = torch.get_num_threads()
        det = torch.are_deterministic_algorithms_enabled()
        warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
        torch.set_num_threads(1)
        if set_det is not None:
            set_det(True, warn_only=False)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            if set_det is not None:
                set_det(det, warn_only=warn_only)
            torch.set_num_threads(threads)


# --------------------------------------------------------------------------- losses


def _instance_contrastive(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    import torch
    import torch.nn.functional as fn

    b = z1.size(0)
    if b == 1:
        return z1.new_tensor(0.0)
    z = torch.cat([z1, z2], dim=0).transpose(0, 1)  # (T, 2B, D)
    sim = torch.matmul(z, z.transpose(1, 2))  # (T, 2B, 2B)
    logits = torch.tril(sim, diagonal=-1)[:, :, :-1] + torch.triu(sim, diagonal=1)[:, :, 1:]
    logits = -fn.log_softmax(logits, dim=-1)
    i = torch.arange(b)
    return (logits[:, i, b + i - 1].mean() + logits[:, b + i, i].mean()) / 2


def _temporal_contrastive(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    import torch
    import torch.nn.functional as fn

    t = z1.size(1)
    if t == 1:
        return z1.new_tensor(0.0)
    z = torch.cat([z1, z2], dim=1)  # (B, 2T, D)
    sim = torch.matmul(z, z.transpose(1, 2))  # (B, 2T, 2T)
    logits = torch.tril(sim, diagonal=-1)[:, :, :-1] + torch.triu(sim, diagonal=1)[:, :, 1:]
    logits = -fn.log_softmax(logits, dim=-1)
    s = torch.arange(t)
    return (logits[:, s, t + s - 1].mean() + logits[:, t + s, s].mean()) / 2


def _hierarchical_contrastive(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """TS2Vec's hierarchical loss over max-pooled time scales, (B, T, D) each."""
    import torch.nn.functional as fn

    loss = z1.new_tensor(0.0)
    scales = 0
    while z1.size(1) > 1:
        loss = loss + 0.5 * _instance_contrastive(z1, z2) + 0.5 * _temporal_contrastive(z1, z2)
        scales += 1
        z1 = fn.max_pool1d(z1.transpose(1, 2), kernel_size=2).transpose(1, 2)
        z2 = fn.max_pool1d(z2.transpose(1, 2), kernel_size=2).transpose(1, 2)
    loss = loss + 0.5 * _instance_contrastive(z1, z2)  # one step left: instance term only
    scales += 1
    return loss / scales


# --------------------------------------------------------------------------- augmentations


def _freq_mix(x: np.ndarray, rng: np.random.Generator, rate: float) -> np.ndarray:
    """TimesURL's FreqMix on (B, T, C): a fraction ``rate`` of each series' frequency
    components (per channel) replaced by those of a random partner in the batch; the DC and
    the dominant non-DC component of each channel are kept."""
    b, t, _ = x.shape
    spec = np.fft.rfft(x, axis=1)  # (B, F, C)
    partner = np.fft.rfft(x[rng.permutation(b)], axis=1)
    swap = rng.random(spec.shape) < rate
    swap[:, 0, :] = False
    if spec.shape[1] > 1:
        dominant = np.argmax(np.abs(spec[:, 1:, :]), axis=1) + 1  # (B, C)
        np.put_along_axis(swap, dominant[:, None, :], False, axis=1)
    mixed = np.where(swap, partner, spec)
    return np.fft.irfft(mixed, n=t, axis=1).astype(np.float32)


def _crop_plan(rng: np.random.Generator, t: int, b: int) -> tuple[int, np.ndarray, int, int,
                                                                   int, int]:
    """TS2Vec's overlapping crops: windows [eleft, right) and [left, eright) (shifted per row
    by ``offset``) overlap on [left, right), of length ``crop_l`` >= min(2, t)."""
    lo = min(2, t)
    crop_l = int(rng.integers(lo, t + 1))
    left = int(rng.integers(0, t - crop_l + 1))
    right = left + crop_l
    eleft = int(rng.integers(0, left + 1))
    eright = int(rng.integers(right, t + 1))
    offset = rng.integers(-eleft, t - eright + 1, size=b)
    return crop_l, offset, left, right, eleft, eright


def _take_rows(x: np.ndarray, start: np.ndarray, length: int) -> np.ndarray:
    idx = start[:, None] + np.arange(length)[None, :]
    return x[np.arange(x.shape[0])[:, None], idx]


def _batches(rng: np.random.Generator, n: int, size: int) -> list[np.ndarray]:
    perm = rng.permutation(n)
    out = [perm[i:i + size] for i in range(0, n, size)]
    if len(out) > 1 and len(out[-1]) == 1:  # no lone series: the instance term needs two
        out[-2] = np.concatenate([out[-2], out.pop()])
    return out


# --------------------------------------------------------------------------- the encoder


class TimesURLEncoder:
    """The torch encoder: :meth:`fit` (self-supervised), :meth:`encode`, :meth:`export`,
    :meth:`save`; :func:`numpy_encode` reproduces :meth:`encode` without torch.

    ``TimesURLEncoder(C)`` builds an untrained encoder (weights drawn from ``seed``);
    :meth:`fit` trains from scratch, so its result depends only on the configuration, the
    data, the hyper-parameters and the fit's seed. ``history`` holds the per-epoch means of
    the loss and its terms after a fit.
    """

    def __init__(self, in_dims: int, *, hidden_dims: int = 32, depth: int = 3,
                 repr_dims: int = 16, kernel_size: int = 3, log_inputs: bool = True,
                 seed: int = 0) -> None:
        self.config = EncoderConfig(in_dims=in_dims, hidden_dims=hidden_dims, depth=depth,
                                    repr_dims=repr_dims, kernel_size=kernel_size,
                                    log_inputs=log_inputs)
        self.history: list[dict[str, float]] = []
        with _fit_settings(seed):
            self._net: Any = _net_class()(self.config)
        self._net.eval()

    @property
    def repr_dims(self) -> int:
        return self.config.repr_dims

    @property
    def loss_history(self) -> list[float]:
        """Per-epoch mean total loss of the last :meth:`fit`."""
        return [h["loss"] for h in self.history]

    # ---- training

    def fit(self, F_train: np.ndarray, *, epochs: int = 40, seed: int = 0, alpha: float = 0.5,
            mask: np.ndarray | None = None, batch_size: int = 16, lr: float = 1e-3,
            mix_rate: float = 0.5, mask_rate: float = 0.25,
            progress: Callable[[int, float], None] | None = None) -> TimesURLEncoder:
        """Train from scratch on ``F_train`` ``(n, T, C)`` (raw features) for ``epochs``
        passes; ``L = L_dual + alpha * L_recon`` (module docstring). ``mask``: optional
        channel mask ``(C,)`` or ``(n, C)``; missing channels are left out of the
        normalisation statistics and set to 0 after standardisation. ``progress(epoch,
        mean_loss)`` is called after each epoch. Deterministic for a seed: the torch RNG is
        seeded (in a forked RNG state), augmentation and batching draw from
        ``numpy.random.default_rng(seed)``, and torch runs on one thread with deterministic
        algorithms; these process-wide settings are restored afterwards, and a lock lets
        one fit run at a time. Returns ``self``."""
        import torch

        x = _check_input(F_train, self.config.in_dims, np.float64)
        n, t, c = x.shape
        if n < 2:
            raise ValueError("fit needs at least two series (the instance contrast)")
        if not np.all(np.isfinite(x)):
            raise ValueError("F_train has non-finite values")
        if epochs < 0 or batch_size < 2:
            raise ValueError("need epochs >= 0 and batch_size >= 2")
        m = _check_mask(mask, n, c)
        xt = _log_np(x) if self.config.log_inputs else x
        present = np.ones((n, t, c), bool) if m is None else np.broadcast_to(
            m[:, None, :], (n, t, c))
        count = present.sum(axis=(0, 1))
        safe = np.maximum(count, 1)
        mean = np.where(present, xt, 0.0).sum(axis=(0, 1)) / safe
        var = np.where(present, (xt - mean) ** 2, 0.0).sum(axis=(0, 1)) / safe
        std = np.sqrt(var)
        std = np.where((count == 0) | (std < _STD_FLOOR), 1.0, std)
        mean = np.where(count == 0, 0.0, mean)
        xn = (xt - mean) / std
        if m is not None:
            xn = xn * m[:, None, :]
        xn = xn.astype(np.float32)

        self.history = []
        with _fit_settings(seed):
            net = _net_class()(self.config)
            net.norm_mean.copy_(torch.from_numpy(mean.astype(np.float32)))
            net.norm_std.copy_(torch.from_numpy(std.astype(np.float32)))
            rng = np.random.default_rng(seed)
            opt = Adam(list(net.parameters()), lr=lr)
            net.train()
            for epoch in range(epochs):
                sums = np.zeros(3)
                batches = _batches(rng, n, batch_size)
                for idx in batches:
                    terms = self._step(net, opt, xn[idx], rng, alpha, mix_rate, mask_rate)
                    sums += terms
                means = sums / len(batches)
                self.history.append({"loss": float(means[0]), "dual": float(means[1]),
                                     "recon": float(means[2])})
                if progress is not None:
                    progress(epoch, float(means[0]))
            net.eval()
        self._net = net
        return self

    @staticmethod
    def _step(net: Any, opt: Adam, xb: np.ndarray, rng: np.random.Generator, alpha: float,
              mix_rate: float, mask_rate: float) -> np.ndarray:
        import torch

        b, t, _ = xb.shape
        # L_dual: original and frequency-mixed views, overlapping crops.
        mixed = _freq_mix(xb, rng, mix_rate)
        crop_l, offset, left, right, eleft, eright = _crop_plan(rng, t, b)
        v1 = _take_rows(xb, offset + eleft, right - eleft)
        v2 = _take_rows(mixed, offset + left, eright - left)
        z1 = net.steps(torch.from_numpy(v1))[:, -crop_l:]
        z2 = net.steps(torch.from_numpy(v2))[:, :crop_l]
        l_dual = _hierarchical_contrastive(z1, z2)
        # L_recon: zero random time steps, reconstruct them.
        hide = rng.random((b, t)) < mask_rate
        hide[np.arange(b), rng.integers(0, t, size=b)] = True
        target = torch.from_numpy(xb)
        masked = torch.from_numpy(xb * ~hide[:, :, None])
        recon = net.decoder(net.steps(masked))
        sel = torch.from_numpy(hide)
        l_recon = ((recon - target) ** 2)[sel].mean()
        loss = l_dual + alpha * l_recon
        opt.zero_grad()
        loss.backward()
        opt.step()
        return np.array([loss.item(), l_dual.item(), l_recon.item()])

    # ---- inference

    def encode(self, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Embeddings ``(n, repr_dims)`` (float32) of raw inputs ``(n, T, C)`` (torch, eval
        mode, no grad). ``mask``: optional channel mask ``(C,)`` or ``(n, C)``."""
        import torch

        a = _check_input(x, self.config.in_dims, np.float32)
        m = _check_mask(mask, a.shape[0], self.config.in_dims)
        mt = None if m is None else torch.from_numpy(m.astype(np.float32))
        self._net.eval()
        with torch.inference_mode():
            return self._net(torch.from_numpy(np.ascontiguousarray(a)), mt).numpy().copy()

    # ---- weights

    def export(self) -> dict[str, np.ndarray]:
        """All weights (decoder included), the normalisation statistics (``norm_mean``,
        ``norm_std``) and the configuration (``config``, int64) as numpy arrays, keyed by
        the torch parameter names."""
        out = {k: v.detach().cpu().numpy().copy() for k, v in self._net.state_dict().items()}
        out["config"] = self.config.to_array()
        return out

    @classmethod
    def from_weights(cls, weights: Mapping[str, np.ndarray]) -> TimesURLEncoder:
        """The encoder whose :meth:`export` gave ``weights``."""
        import torch

        cfg = EncoderConfig.from_array(weights["config"])
        enc = cls(cfg.in_dims, hidden_dims=cfg.hidden_dims, depth=cfg.depth,
                  repr_dims=cfg.repr_dims, kernel_size=cfg.kernel_size,
                  log_inputs=cfg.log_inputs)
        state = {k: torch.from_numpy(np.array(v, dtype=np.float32))
                 for k, v in weights.items() if k != "config"}
        enc._net.load_state_dict(state, strict=True)
        enc._net.eval()
        return enc

    def save(self, path: str | Path) -> None:
        """Write :meth:`export` to ``path`` (``.npz``; read back with :func:`load_weights`)."""
        with Path(path).open("wb") as f:
            np.savez(f, **self.export())

    @classmethod
    def load(cls, path: str | Path) -> TimesURLEncoder:
        """The torch encoder saved at ``path``."""
        return cls.from_weights(load_weights(path))
