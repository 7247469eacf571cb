"""seer.stpa.adam.Adam: torch.optim.Adam's update through torch's functional Adam
(constructing torch.optim optimizers re-enables the GIL on 3.14t where triton is
installed), with optional global-norm clipping."""

import math

import pytest

torch = pytest.importorskip("torch")

from seer.stpa.adam import Adam  # noqa: E402


def test_first_steps_follow_the_adam_formula():
    p = torch.nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))
    opt = Adam([p], lr=0.1)
    grads = [torch.tensor([0.5, -2.0], dtype=torch.float64),
             torch.tensor([-1.0, 4.0], dtype=torch.float64)]
    m = v = torch.zeros(2, dtype=torch.float64)
    expected = p.detach().clone()
    for t, g in enumerate(grads, 1):
        p.grad = g.clone()
        assert opt.step() == pytest.approx(float(g.norm()))
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        expected -= 0.1 * (m / (1 - 0.9**t)) / ((v / (1 - 0.999**t)).sqrt() + 1e-8)
        assert torch.allclose(p.detach(), expected, rtol=0, atol=1e-12)


def test_clipping_scales_the_gradient_to_the_maximum_norm():
    a = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    b = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    clipped, free = Adam([a], lr=1.0, max_grad_norm=1.0), Adam([b], lr=1.0)
    a.grad = torch.tensor([30.0, 40.0], dtype=torch.float64)  # norm 50
    b.grad = a.grad * (1.0 / (50.0 + 1e-6))
    assert clipped.step() == pytest.approx(50.0) and free.step() == pytest.approx(1.0)
    assert torch.allclose(clipped.m[0], free.m[0], rtol=1e-12) and math.isclose(
        float(clipped.v[0].sum()), float(free.v[0].sum()), rel_tol=1e-12)


def test_parameters_without_gradients_are_left_alone_and_state_round_trips():
    a = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.ones(3))
    opt = Adam([a, b], lr=0.5)
    a.grad = torch.ones(3)
    opt.step()
    assert torch.equal(b.detach(), torch.ones(3)) and not torch.equal(a.detach(), torch.ones(3))
    other = Adam([torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))], lr=0.1)
    other.load_state_dict(opt.state_dict())
    assert other.t == 1 and other.lr == 0.5 and torch.equal(other.m[0], opt.m[0])
    opt.zero_grad()
    assert a.grad is None
