"""The TimesURL-style encoder: numpy forward = torch forward, deterministic training that
learns, weights round-trip, and inference without torch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from seer.stpa.encoder import (
    EncoderConfig,
    channel_mask,
    flatten_preflight,
    load_weights,
    numpy_encode,
)

REPO = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the stpa extra)")

C = 6  # two metrics x (mean, variance, range)
FAMILIES = 4


def families(n_per: int, t: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Series of four families: rising, falling, slow sine, fast sine (random amplitude,
    phase and noise per channel)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(t)[:, None]
    xs, ys = [], []
    for fam in range(FAMILIES):
        for _ in range(n_per):
            amp = rng.uniform(0.5, 1.5, C)
            phase = rng.uniform(0, 2 * np.pi, C)
            if fam == 0:
                s = 0.3 * steps * amp
            elif fam == 1:
                s = -0.3 * steps * amp
            elif fam == 2:
                s = amp * np.sin(2 * np.pi * steps / t + phase)
            else:
                s = amp * np.sin(2 * np.pi * 3 * steps / t + phase)
            xs.append(s + rng.normal(0, 0.3, (t, C)))
            ys.append(fam)
    return np.array(xs, np.float32), np.array(ys)


def nearest_centroid_accuracy(train: np.ndarray, y: np.ndarray, test: np.ndarray,
                              y_test: np.ndarray) -> float:
    centroids = np.stack([train[y == k].mean(axis=0) for k in range(FAMILIES)])
    d = ((test[:, None, :] - centroids[None]) ** 2).sum(axis=-1)
    return float((d.argmin(axis=1) == y_test).mean())


def raw_inputs(rng: np.random.Generator, n: int, t: int, c: int = C) -> np.ndarray:
    """Raw-metric-like inputs: non-negative, over several orders of magnitude."""
    scale = 10.0 ** rng.integers(-2, 7, size=c)
    return (rng.lognormal(0, 1, (n, t, c)) * scale).astype(np.float32)


def assert_close(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def trained():
    """An encoder trained on the four families (T = 8), with held-out data."""
    from seer.stpa.encoder import TimesURLEncoder

    x, y = families(40, 8, seed=1)
    x_test, y_test = families(20, 8, seed=2)
    epochs: list[int] = []
    enc = TimesURLEncoder(C).fit(x, epochs=20, seed=0, alpha=0.5,
                                 progress=lambda e, loss: epochs.append(e))
    return enc, x, y, x_test, y_test, epochs


# --------------------------------------------------------------------------- forward


@needs_torch
@pytest.mark.parametrize(("t", "n", "cfg"), [
    (4, 1, {}),
    (8, 5, {}),
    (12, 3, {}),
    (8, 7, {"hidden_dims": 8, "depth": 1, "repr_dims": 4}),
    (4, 2, {"depth": 4, "log_inputs": False}),  # dilation 8 > T: padding only
    (12, 4, {"depth": 0, "kernel_size": 5}),
])
def test_numpy_matches_torch_untrained(t: int, n: int, cfg: dict) -> None:
    from seer.stpa.encoder import TimesURLEncoder

    rng = np.random.default_rng(t * 100 + n)
    enc = TimesURLEncoder(C, seed=n, **cfg)
    w = enc.export()
    # Non-trivial normalisation statistics.
    w["norm_mean"] = rng.normal(0, 2, C).astype(np.float32)
    w["norm_std"] = rng.uniform(0.5, 3, C).astype(np.float32)
    enc = TimesURLEncoder.from_weights(w)
    x = raw_inputs(rng, n, t) if enc.config.log_inputs else rng.normal(size=(n, t, C))
    out = enc.encode(x)
    assert out.shape == (n, enc.repr_dims) and out.dtype == np.float32
    assert_close(numpy_encode(w, x), out)
    mask = rng.random((n, C)) < 0.7
    assert_close(numpy_encode(w, x, mask), enc.encode(x, mask))


@needs_torch
@pytest.mark.parametrize("t", [4, 8, 12])
def test_numpy_matches_torch_trained(trained, t: int) -> None:
    from seer.stpa.encoder import TimesURLEncoder

    enc = trained[0]
    rng = np.random.default_rng(t)
    x = families(3, t, seed=t)[0]
    w = enc.export()
    assert_close(numpy_encode(w, x), enc.encode(x))
    # Briefly trained at this T, on raw-metric-like data.
    x_raw = raw_inputs(rng, 24, t)
    brief = TimesURLEncoder(C).fit(x_raw, epochs=2, seed=3)
    assert_close(numpy_encode(brief.export(), x_raw), brief.encode(x_raw))


# --------------------------------------------------------------------------- training


@needs_torch
def test_fit_is_deterministic_and_leaves_torch_settings() -> None:
    import torch

    from seer.stpa.encoder import TimesURLEncoder

    x = raw_inputs(np.random.default_rng(0), 40, 8)
    threads = torch.get_num_threads()
    det = torch.are_deterministic_algorithms_enabled()
    rng_state = torch.get_rng_state()
    a = TimesURLEncoder(C).fit(x, epochs=3, seed=7, batch_size=8)
    b = TimesURLEncoder(C, seed=99).fit(x, epochs=3, seed=7, batch_size=8)
    c = TimesURLEncoder(C).fit(x, epochs=3, seed=8, batch_size=8)
    wa, wb, wc = a.export(), b.export(), c.export()
    assert wa.keys() == wb.keys()
    for k in wa:
        np.testing.assert_array_equal(wa[k], wb[k], err_msg=k)
    assert a.history == b.history
    assert any(not np.array_equal(wa[k], wc[k]) for k in wa if k != "config")
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == det
    assert torch.equal(torch.get_rng_state(), rng_state)


@needs_torch
def test_fit_learns_families(trained) -> None:
    enc, x, y, x_test, y_test, epochs = trained
    assert epochs == list(range(20))
    h = enc.loss_history
    assert len(h) == 20 and all(np.isfinite(h))
    assert np.mean(h[-3:]) < 0.7 * h[0], h
    assert enc.history[-1]["recon"] < enc.history[0]["recon"]
    assert enc.history[-1]["dual"] < enc.history[0]["dual"]
    acc = nearest_centroid_accuracy(enc.encode(x), y, enc.encode(x_test), y_test)
    assert acc >= 0.65, acc  # chance: 0.25


@needs_torch
@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_fit_short_series(t: int) -> None:
    from seer.stpa.encoder import TimesURLEncoder

    x = raw_inputs(np.random.default_rng(t), 9, t)
    enc = TimesURLEncoder(C, depth=2).fit(x, epochs=2, seed=0, batch_size=4)
    assert all(np.isfinite(enc.loss_history))
    assert_close(numpy_encode(enc.export(), x), enc.encode(x))


@needs_torch
def test_fit_with_mask() -> None:
    from seer.stpa.encoder import TimesURLEncoder

    rng = np.random.default_rng(5)
    x = raw_inputs(rng, 20, 8)
    mask = np.ones((20, C), bool)
    mask[:10, 3:] = False  # the second metric is missing on half of the machines
    x[~np.broadcast_to(mask[:, None, :], x.shape)] = 0.0
    enc = TimesURLEncoder(C).fit(x, epochs=2, seed=0, mask=mask)
    w = enc.export()
    logged = np.log1p(x[10:, :, 3:].astype(np.float64))
    np.testing.assert_allclose(w["norm_mean"][3:], logged.mean(axis=(0, 1)), rtol=1e-5)
    # A missing channel is the training mean, whatever its raw value.
    x2 = x.copy()
    x2[:10, :, 3:] = 123.0
    np.testing.assert_array_equal(enc.encode(x, mask), enc.encode(x2, mask))
    assert_close(numpy_encode(w, x, mask), enc.encode(x, mask))


# --------------------------------------------------------------------------- weights


@needs_torch
def test_save_load_round_trip(trained, tmp_path: Path) -> None:
    from seer.stpa.encoder import TimesURLEncoder

    enc, *_ = trained
    path = tmp_path / "encoder.npz"
    enc.save(path)
    w = load_weights(path)
    exported = enc.export()
    assert w.keys() == exported.keys()
    for k in w:
        np.testing.assert_array_equal(w[k], exported[k], err_msg=k)
    assert EncoderConfig.from_array(w["config"]) == enc.config
    x = families(2, 8, seed=9)[0]
    np.testing.assert_array_equal(TimesURLEncoder.load(path).encode(x), enc.encode(x))
    np.testing.assert_array_equal(numpy_encode(w, x), numpy_encode(exported, x))


def random_weights(cfg: EncoderConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Weights in the exported layout, built without torch."""
    h, r, k = cfg.hidden_dims, cfg.repr_dims, cfg.kernel_size

    def arr(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    w = {"config": cfg.to_array(), "norm_mean": arr(cfg.in_dims),
         "norm_std": rng.uniform(0.5, 2, cfg.in_dims).astype(np.float32),
         "input_fc.weight": arr(h, cfg.in_dims), "input_fc.bias": arr(h),
         "output_fc.weight": arr(r, h), "output_fc.bias": arr(r),
         "decoder.weight": arr(cfg.in_dims, r), "decoder.bias": arr(cfg.in_dims)}
    for i in range(cfg.depth):
        for conv in ("conv1", "conv2"):
            w[f"blocks.{i}.{conv}.weight"] = arr(h, h, k)
            w[f"blocks.{i}.{conv}.bias"] = arr(h)
    return w


def test_inference_without_torch(tmp_path: Path) -> None:
    """Importing the numpy forward and running it on saved weights never imports torch (and
    the hand-built layout is the torch encoder's, when torch is at hand)."""
    rng = np.random.default_rng(11)
    w = random_weights(EncoderConfig(in_dims=C), rng)
    np.savez(tmp_path / "w.npz", **w)
    x = raw_inputs(rng, 3, 8)
    np.save(tmp_path / "x.npy", x)
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        from seer.stpa.encoder import load_weights, numpy_encode
        out = numpy_encode(load_weights({str(tmp_path / "w.npz")!r}),
                           np.load({str(tmp_path / "x.npy")!r}))
        np.save({str(tmp_path / "out.npy")!r}, out)
        print(json.dumps({{"torch": "torch" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"torch": False}
    out = np.load(tmp_path / "out.npy")
    np.testing.assert_array_equal(out, numpy_encode(w, x))
    if HAS_TORCH:
        from seer.stpa.encoder import TimesURLEncoder

        assert_close(out, TimesURLEncoder.from_weights(w).encode(x))


@needs_torch
@pytest.mark.skipif(not hasattr(sys, "_is_gil_enabled") or sys._is_gil_enabled(),
                    reason="needs a free-threaded build with the GIL disabled")
def test_training_keeps_the_gil_disabled() -> None:
    """torch.optim and torch.use_deterministic_algorithms import triton, which re-enables
    the GIL: fit avoids both."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from seer.stpa.encoder import TimesURLEncoder
        x = np.random.default_rng(0).normal(size=(8, 8, 3)).astype(np.float32)
        enc = TimesURLEncoder(3).fit(x, epochs=1, seed=0)
        enc.encode(x)
        print(sys._is_gil_enabled(), "triton" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"], done.stderr


# --------------------------------------------------------------------------- helpers


def test_flatten_preflight_layout() -> None:
    f = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)  # (N, T, 3)
    x = flatten_preflight(f)
    assert x.shape == (1, 5, 6)
    for metric in range(2):
        for stat in range(3):
            np.testing.assert_array_equal(x[0, :, 3 * metric + stat], f[metric, :, stat])
    f[1, 2, 0] = np.nan
    x = flatten_preflight(np.stack([f, f]), mask=np.array([True, False]))
    assert x.shape == (2, 5, 6) and np.all(x[:, :, 3:] == 0) and np.all(np.isfinite(x))
    np.testing.assert_array_equal(channel_mask(np.array([True, False])),
                                  [True, True, True, False, False, False])


def test_bad_inputs() -> None:
    w = {"config": EncoderConfig(in_dims=C).to_array()}
    with pytest.raises(ValueError, match="channels"):
        numpy_encode(w, np.zeros((1, 8, C + 1)))
    with pytest.raises(ValueError, match=r"\(n, T, C\)"):
        numpy_encode(w, np.zeros((8, C)))
    bad = w["config"].copy()
    bad[0] = 99
    with pytest.raises(ValueError, match="format"):
        numpy_encode({"config": bad}, np.zeros((1, 8, C)))
    with pytest.raises(ValueError, match="odd"):
        EncoderConfig(in_dims=C, kernel_size=2)
