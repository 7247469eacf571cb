"""The workloads' results are pinned: a fixed episode of PCS and of Aircraft gives stored
bytes on every runtime.

Handler rewrites for speed (``docs/performance.md``) must not change a single result; this
file is the check. The hashes were computed before such a rewrite and must hold after it.
They depend on numpy's floating-point kernels (Aircraft uses libm functions, PCS an SVD),
so they are checked on the numpy minor version they were computed with, and PCS's on the
OpenBLAS kernel too (threadpoolctl's ``architecture``: an SVD's last bits differ between
the Haswell and SkylakeX kernels). On another version or kernel, record them on purpose
(``python -m tests.workloads.test_fixed_episodes``) after checking that the old code gives
the same new hashes; until then the PCS pin is skipped there, saying so, and
:func:`test_every_runtime_gives_one_episode` still checks that the runtimes agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import seer
from tests.helpers import results_sha256
from workloads.aircraft import Aircraft
from workloads.pcs import PCS

#: numpy minor version the hashes below were computed with
NUMPY = "2.5"
RUNTIMES = [("serial", 1), ("seer", 2), ("static", 2), ("global", 2), ("executor", 2)]
SEEDS = (0, 1, 2)
STEPS = 4


def _models() -> dict[str, seer.Model]:
    return {"pcs": PCS(12, 12, cost_us=15, hotspot_gain=4.0),
            "aircraft": Aircraft(60, cost_us=20)}


def episode_sha256(workload: str, runtime: str, threads: int, seed: int) -> str:
    """sha256 of every output of ``STEPS`` steps after a reset, then the final state."""
    model = _models()[workload]
    with seer.make_runtime(model, runtime, threads=threads) as rt:
        results = [rt.reset(seed=seed)]
        for t in range(STEPS):
            results.append(rt.step(model.sample_actions(t)))
        return results_sha256(rt, results)


def blas_kernel() -> str:
    """The OpenBLAS kernel numpy's BLAS runs here (``"?"`` when threadpoolctl cannot say)."""
    from threadpoolctl import threadpool_info

    kernels = [i.get("architecture") for i in threadpool_info() if i["internal_api"] == "openblas"]
    return kernels[0] if kernels and kernels[0] else "?"


#: PCS's hashes per OpenBLAS kernel (the SVD), both sets from the same code
PCS_BY_KERNEL = {
    # the Intel Xeon machine the pins were first computed on: its kernel was not recorded;
    # filed under SkylakeX, what numpy's OpenBLAS picks on an AVX-512 Xeon (a SkylakeX
    # machine where they fail would say otherwise)
    "SkylakeX": {
        ('pcs', 0): '038db80c33cb6cb958bb7cc02c8c9ba450db669739a671afcd9b9687d781ccde',
        ('pcs', 1): '20c6dc0d5eaca29d0e1f277938d521193e774e94865aa7ceec34e65fe37a8cd3',
        ('pcs', 2): '3412e0c8d3eb02c781b42ca2ea1c4858ba58ed09947ccae3e9b9f9792c830f85',
    },
    # an AMD EPYC with OPENBLAS_CORETYPE=Haswell; ebbca1c gives the same hashes there
    "Haswell": {
        ('pcs', 0): '41bcc6579e4c95305a2f63317b96b98984a1a0098ef4f099f91a9645950a31fa',
        ('pcs', 1): '69d39410346f1764b38daa37b3dae6449b96ef217712107ee9b0b5132849f837',
        ('pcs', 2): '15a52b66a538c960360d79592ba08c18a34914ff733d0ef492ae0a0c7308c970',
    },
}
EXPECTED = {
    ('aircraft', 0): '0bed52aa091f7efa62f6e3ac578062598ee2e81e79b48c1c03492ea1c0f611d0',
    ('aircraft', 1): '9c49e347dc8856c0b44457af913a5bf9c9f554630c113af398da042b01c2961a',
    ('aircraft', 2): '75ff4dcfca92d2de99ff511782d4966c6655de668cbca9a545f6beb384b2f868',
}


@pytest.mark.skipif(".".join(np.__version__.split(".")[:2]) != NUMPY,
                    reason=f"hashes computed with numpy {NUMPY}.x")
@pytest.mark.parametrize("workload", ["pcs", "aircraft"])
@pytest.mark.parametrize("seed", SEEDS)
def test_fixed_episode(workload: str, seed: int) -> None:
    expected = EXPECTED if workload == "aircraft" else PCS_BY_KERNEL.get(blas_kernel())
    if expected is None:
        pytest.skip(f"no pinned PCS hashes for the OpenBLAS kernel {blas_kernel()!r}: "
                    "record them (module docstring)")
    for runtime, threads in RUNTIMES:
        assert episode_sha256(workload, runtime, threads, seed) == expected[workload, seed], \
            f"{workload} seed {seed} on {runtime}({threads}): results changed"


@pytest.mark.parametrize("workload", ["pcs", "aircraft"])
def test_every_runtime_gives_one_episode(workload: str) -> None:
    """Whatever the kernel: every runtime's bytes are serial's."""
    hashes = {(r, t): episode_sha256(workload, r, t, 0) for r, t in RUNTIMES}
    assert len(set(hashes.values())) == 1, hashes


if __name__ == "__main__":
    print(f"OpenBLAS kernel: {blas_kernel()}")
    for w in ("pcs", "aircraft"):
        for s in SEEDS:
            hashes = {episode_sha256(w, r, t, s) for r, t in RUNTIMES}
            assert len(hashes) == 1, f"runtimes disagree on {w} seed {s}"
            print(f"    ({w!r}, {s}): {hashes.pop()!r},")
