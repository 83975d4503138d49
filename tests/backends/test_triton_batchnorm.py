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


_COMPILE = r'''
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from mpsgraph.backends.torch.kernels import batchnorm as bn

P, I = "*fp32", "i32"
C_ = "constexpr"
ROWS = {"CH_ON_ROWS": C_, "BR": C_, "BK": C_}
jobs = []
for rows, (rbr, rbk), (ebr, ebk) in ((True, (4, 1024), (2, 1024)), (False, (64, 64), (8, 256))):
    red = {"CH_ON_ROWS": rows, "BR": rbr, "BK": rbk}
    ew = {"CH_ON_ROWS": rows, "BR": ebr, "BK": ebk}
    jobs += [
        (bn._stats_partial, dict(x_ptr=P, n_ptr=P, mean_ptr=P, m2_ptr=P, R=I, K=I, C=I,
                                 ROWS_PER_SLICE=I, **ROWS), red, 8),
        (bn._bwd_partial, dict(dy_ptr=P, x_ptr=P, m_ptr=P, sdy_ptr=P, sdx_ptr=P, R=I, K=I, C=I,
                               ROWS_PER_SLICE=I, **ROWS), red, 8),
        (bn._normalize, dict(x_ptr=P, y_ptr=P, m_ptr=P, v_ptr=P, g_ptr=P, b_ptr=P, eps="fp32",
                             R=I, K=I, C=I, HAS_G=C_, HAS_B=C_, **ROWS),
         {"HAS_G": True, "HAS_B": True, **ew}, 4),
        (bn._bwd_dx, dict(dy_ptr=P, x_ptr=P, dx_ptr=P, m_ptr=P, v_ptr=P, g_ptr=P, ty_ptr=P,
                          tx_ptr=P, eps="fp32", inv_n="fp32", R=I, K=I, C=I, HAS_G=C_, **ROWS),
         {"HAS_G": True, **ew}, 4)]
jobs += [(bn._stats_combine, dict(n_ptr=P, mean_ptr=P, m2_ptr=P, m_out=P, v_out=P, C=I, S=I,
                                  BS=C_, BC=C_), {"BS": 4, "BC": 256}, 4),
         (bn._bwd_combine, dict(sdy_ptr=P, sdx_ptr=P, v_ptr=P, dg_ptr=P, db_ptr=P, ty_ptr=P,
                                tx_ptr=P, eps="fp32", C=I, S=I, BS=C_, BC=C_),
          {"BS": 4, "BC": 256}, 4)]
try:
    srcs = [(ASTSource(fn=fn, signature=sig, constexprs=consts), w) for fn, sig, consts, w in jobs]
except TypeError as e:  # another Triton's ASTSource
    print("SKIP", e)
    sys.exit(0)
for src, w in srcs:
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": w})
    assert ".local" not in k.asm["ptx"], "register spills"
print("OK", len(srcs))
'''


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU tests above compile them")
def test_kernels_compile_for_sm90_without_a_gpu():
    """The interpreter does not run Triton's compiler: compile every kernel (both layouts) to
    an sm_90 cubin in a fresh process (no TRITON_INTERPRET), with no register spills."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    p = subprocess.run([sys.executable, "-c", _COMPILE], env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0 and ("ptxas" in p.stderr or "NVIDIA" in p.stderr):
        pytest.skip(f"no CUDA toolchain for Triton here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.startswith("SKIP"):
        pytest.skip(p.stdout.strip())
    assert p.stdout.strip() == "OK 10"
