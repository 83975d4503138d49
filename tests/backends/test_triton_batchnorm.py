"""The Triton batch-norm kernels (kernels/batchnorm.py) against float64 torch code that does not
call them: statistics, normalize and the fused backward, with the channel axis first, inner
(NCHW) and last (NHWC), size-1 axes, several row slices per channel (S > 1) and more columns
than one tile; a mean far from zero (the variance must not cancel); float16 data. On the CPU
the kernels run under TRITON_INTERPRET=1."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

bn, = triton_kernels("batchnorm")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
EPS = 1e-5


def _ref(x, dy, c, gamma, beta):
    axes = [i for i in range(x.dim()) if i != c]
    shape = [x.shape[i] if i == c else 1 for i in range(x.dim())]
    m = x.mean(axes, keepdim=True)
    v = ((x - m) ** 2).mean(axes, keepdim=True)
    r = 1 / torch.sqrt(v + EPS)
    xh = (x - m) * r
    g, b = gamma.reshape(shape), beta.reshape(shape)
    dyg = dy * g
    dx = r * (dyg - dyg.mean(axes, keepdim=True) - xh * (dyg * xh).mean(axes, keepdim=True))
    return (m.reshape(-1), v.reshape(-1), xh * g + b, dx, (dy * xh).sum(axes),
            dy.sum(axes), (r * dyg).abs().max())


CASES = [((3, 5, 4, 7), 1), ((4, 3, 5, 6), 3), ((7, 1, 3), 1), ((1, 1, 1, 1), 1),
         ((5, 4, 3), 0), ((2100, 3), 1), ((4, 2, 1100), 1), ((2, 3, 2, 2100), 1),
         ((2, 2, 4500), 1)]


@pytest.mark.parametrize("shape,c", CASES, ids=[f"{s}-c{c}" for s, c in CASES])
def test_kernels_match_float64(shape, c):
    g = torch.Generator().manual_seed(hash(shape) % 2**31)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 2
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    C = shape[c]
    gamma = torch.rand(C, generator=g, dtype=torch.float64) + 0.5
    beta = torch.randn(C, generator=g, dtype=torch.float64)
    m64, v64, y64, dx64, dg64, db64, scale = _ref(x, dy, c, gamma, beta)
    f = lambda t: t.to(DEVICE, torch.float32)  # noqa: E731
    m, v = bn.statistics(f(x), c)
    torch.testing.assert_close(m.double().cpu(), m64, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(v.double().cpu(), v64, rtol=1e-5, atol=1e-6)
    y = bn.normalize(f(x), c, m, v, f(gamma), f(beta), EPS)
    torch.testing.assert_close(y.double().cpu(), y64, rtol=1e-5, atol=1e-5)
    y0 = bn.normalize(f(x), c, m, v, None, None, EPS)  # gamma 1, beta 0
    torch.testing.assert_close(y0.double().cpu(), (y64 - beta.reshape(
        [C if i == c else 1 for i in range(x.dim())])) / gamma.reshape(
        [C if i == c else 1 for i in range(x.dim())]), rtol=1e-5, atol=1e-5)
    dx, dg, db = bn.backward(f(dy), f(x), c, m, v, f(gamma), EPS)
    torch.testing.assert_close(dx.double().cpu(), dx64, rtol=1e-4, atol=1e-5 * float(scale))
    n = x.numel() // C
    torch.testing.assert_close(dg.double().cpu(), dg64, rtol=1e-4, atol=1e-5 * n ** 0.5)
    torch.testing.assert_close(db.double().cpu(), db64, rtol=1e-4, atol=1e-5 * n ** 0.5)


def test_variance_far_from_zero_does_not_cancel():
    """mean 1000, standard deviation 0.01: E[x^2] - E[x]^2 in float32 would lose every digit."""
    g = torch.Generator().manual_seed(5)
    x = (torch.randn((6, 2, 300), generator=g, dtype=torch.float64) * 0.01 + 1000).float()
    x64 = x.double()  # the exact variance of the float32 values
    v64 = ((x64 - x64.mean((0, 2), keepdim=True)) ** 2).mean((0, 2))
    _, v = bn.statistics(x.to(DEVICE), 1)
    torch.testing.assert_close(v.double().cpu(), v64, rtol=2e-3, atol=0)


def test_float16_data():
    g = torch.Generator().manual_seed(6)
    x = torch.randn((4, 3, 5, 5), generator=g, dtype=torch.float64)
    dy = torch.randn((4, 3, 5, 5), generator=g, dtype=torch.float64)
    gamma, beta = torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    xh = x.half()
    m64, v64, y64, dx64, _, _, _ = _ref(xh.double(), dy.half().double(), 1, gamma, beta)
    m, v = bn.statistics(xh.to(DEVICE), 1)
    assert m.dtype == v.dtype == torch.float16
    torch.testing.assert_close(m.double().cpu(), m64, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(v.double().cpu(), v64, rtol=1e-3, atol=1e-3)
    y = bn.normalize(xh.to(DEVICE), 1, m, v, None, None, EPS)
    torch.testing.assert_close(y.double().cpu(), y64, rtol=5e-3, atol=5e-3)


def test_supported():
    x = torch.zeros((2, 3, 4))
    assert bn.supported(x, 1)
    assert not bn.supported(x.transpose(0, 2), 1)  # not contiguous
    assert not bn.supported(torch.zeros((0, 3)), 1)  # empty
    assert not bn.supported(x.double(), 1)
