"""The persistent Triton LSTM kernels (kernels/lstm_seq_fwd.py, kernels/lstm_seq_bwd.py) and
their use by backends/torch/rnn.py, against the torch LSTM run in float64 (which never uses
Triton): every activation at every gate (cycled), peephole, per-step and state-shaped masks,
forgetGateLast, reverse, bidirectional, with and without h0 / c0 / W / b, a per-step cell
gradient and final state / cell gradients; float32 tightly, bfloat16 / float16 loosely.
Every kernel output is poisoned (NaN) before the launch so that an unwritten element fails.

On the CPU the kernels run under TRITON_INTERPRET=1 (set by this module while it imports them
when no GPU is present), one launch per step (SYNC=False); on a GPU both the persistent launch
and the per-step launches are tested."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

lstm_seq_bwd, lstm_seq_fwd = triton_kernels("lstm_seq_bwd", "lstm_seq_fwd")

from mpsgraph.backends._lstm_glue import gate_blocks, step_shift  # noqa: E402
from mpsgraph.backends.torch import rnn  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SYNCS = [None, False] if CUDA else [None]  # None: persistent on CUDA, per step otherwise


@pytest.fixture
def triton_on(monkeypatch):
    """rnn.py picks Triton on the CPU only under TRITON_INTERPRET=1."""
    monkeypatch.delenv("MPSGRAPH_NO_TRITON", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_KERNEL", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING_BWD", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_FP32_DOT", raising=False)
    if not CUDA:
        monkeypatch.setenv("TRITON_INTERPRET", "1")


@dataclass(frozen=True)
class Case:
    kind: int  # gate k gets activation (kind + k) % 5; g gets (kind + 4) % 5
    fgl: bool = False
    peep: bool = False
    mask: str = "none"  # none | seq | state
    dirs: str = "fwd"  # fwd | rev | bi
    h0: bool = False
    c0: bool = False
    W: bool = True
    b: bool = True
    dcell: bool = False
    dhf: bool = False
    dcf: bool = False
    T: int = 4
    N: int = 3
    H: int = 5
    tile: tuple[int, int, int, int] | None = None  # BN, BU, BKF, BKB (None: plan)
    smooth: bool = False  # the default activations instead (no kinks: for the half types)
    r_scale: float = 0.4  # R's entries: N(0, r_scale^2) (smaller for large H: see the cluster
    # cases)

    @property
    def D(self):
        return 2 if self.dirs == "bi" else 1

    @property
    def acts(self):
        if self.smooth:
            return (3, 3, 2, 3, 2)
        return tuple((self.kind + k) % 5 for k in range(5))

    @property
    def opts(self):
        return dict(reverse=self.dirs == "rev", bidirectional=self.dirs == "bi",
                    forget_gate_last=self.fgl, activations=self.acts)

    def __str__(self):
        on = [k for k in ("fgl", "peep", "h0", "c0", "W", "b", "dcell", "dhf", "dcf")
              if getattr(self, k)]
        kind = "smooth" if self.smooth else f"k{self.kind}"
        return (f"{kind}-{self.dirs}-m{self.mask}-{'+'.join(on)}-T{self.T}N{self.N}H{self.H}"
                + (f"-t{self.tile}" if self.tile else ""))


CASES = [
    Case(0, peep=True, mask="seq", h0=True, c0=True, dcell=True, dhf=True, dcf=True),
    Case(1, fgl=True, mask="state", dirs="rev", c0=True, b=False, dhf=True),
    Case(2, peep=True, dirs="bi", h0=True, W=False, dcell=True, dcf=True),
    Case(3, fgl=True, peep=True, mask="seq", dirs="bi", dhf=True, dcf=True),
    Case(4, mask="state", h0=True, c0=True, W=False, b=False, dcell=True),
    Case(2, fgl=True, dirs="rev", peep=True, mask="seq", h0=True),
    Case(3),  # the default LSTM
    # several tiles along N and H, several reduction chunks
    Case(3, peep=True, mask="seq", dirs="bi", h0=True, c0=True, dcell=True, dhf=True,
         dcf=True, N=17, H=20, tile=(16, 16, 16, 16)),
    Case(1, fgl=True, mask="state", dirs="rev", h0=True, dhf=True, T=3, N=17, H=20,
         tile=(32, 16, 32, 64)),
    Case(2, dirs="bi", c0=True, T=3, N=17, H=20),
]


def _inputs(case: Case, dtype=torch.float32):
    """Random inputs (seeded by the case) as `dtype`, and the same values in float64."""
    g = torch.Generator().manual_seed(zlib.crc32(str(case).encode()))
    T, N, H, D = case.T, case.N, case.H, case.D
    G, I = 4 * H, 6

    def r(*s, scale=1.0):
        return (torch.randn(*s, generator=g) * scale).to(dtype)

    a = {"x": r(T, N, I if case.W else D * G), "R": r(D, G, H, scale=case.r_scale),
         "W": r(D * G, I, scale=0.4) if case.W else None,
         "b": r(D * G, scale=0.5) if case.b else None,
         "h0": r(N, D * H) if case.h0 else None, "c0": r(N, D * H) if case.c0 else None,
         "p": r(D, G, scale=0.5) if case.peep else None,
         "dstate": r(T, N, D * H), "dcell": r(T, N, D * H) if case.dcell else None,
         "dhf": r(N, D * H) if case.dhf else None, "dcf": r(N, D * H) if case.dcf else None}
    if case.mask == "seq":
        a["mask"] = (torch.rand(T, N, D * H, generator=g) > 0.3).to(dtype)
    elif case.mask == "state":
        a["mask"] = (torch.rand(N, D * H, generator=g) > 0.3).to(dtype)
    else:
        a["mask"] = None
    a64 = {k: None if v is None else v.to(torch.float64) for k, v in a.items()}
    dev = {k: None if v is None else v.to(DEVICE) for k, v in a.items()}
    return dev, a64


def _reference(case: Case, a):
    """float64 torch LSTM: (state, cell, zState), gradients, and dA (the gradients' source
    without W)."""
    o = case.opts
    s, c, z = rnn.lstm_forward(a["x"], a["R"], a["W"], a["b"], a["h0"], a["c0"], a["mask"],
                               a["p"], **o)
    need = dict(need_b=case.b, need_peephole=case.peep, need_h0=case.h0, need_c0=case.c0)
    args = (a["h0"], a["c0"], a["mask"], a["p"], a["dhf"], a["dcf"], a["dcell"])
    g = rnn.lstm_backward(a["x"], a["R"], a["dstate"], z, c, a["W"], a["b"], *args, **need,
                          **o)
    gA = rnn.lstm_backward(a["x"], a["R"], a["dstate"], z, c, None, None, *args,
                           need_b=False, need_peephole=False, need_h0=True, need_c0=True, **o)
    return (s, c, z), g, gA


def _tiling(case: Case, dtype):
    if case.tile is None:
        return None
    bn, bu, bkf, bkb = case.tile
    return lstm_seq_fwd._tiling(case.N, case.H, bn, bu, 2 if dtype != torch.float32 else 4,
                                bkf, bkb)


def _close(got, want, tol, name):
    """rtol = tol, atol = tol times the reference's largest magnitude (at least 1): float32
    rounding is relative to the size of the terms summed, not to a result near zero."""
    atol = tol * max(1.0, want.abs().max().item()) if want.numel() else tol
    torch.testing.assert_close(got.double().cpu(), want, rtol=tol, atol=atol, msg=lambda m:
                               f"{name}: {m}")


def _kernel_check(case: Case, dtype, tol, sync):
    a, a64 = _inputs(case, dtype)
    (s64, c64, z64), g64, gA = _reference(case, a64)
    T, N, H, D = case.T, case.N, case.H, case.D
    f32 = torch.float32
    nan = float("nan")
    blocks = gate_blocks(case.fgl)
    tiling = _tiling(case, dtype)
    o = dict(reverse=case.dirs == "rev", bidirectional=case.dirs == "bi", blocks=blocks,
             activations=case.acts, tiling=tiling, sync=sync)
    # forward: xp in the input dtype, as rnn.py makes it
    x = a["x"]
    if case.W:
        xp = x.reshape(T * N, -1) @ a["W"].t()
        xp = (xp if a["b"] is None else xp + a["b"]).reshape(T, N, D * 4 * H)
    else:
        xp = x if a["b"] is None else x + a["b"]
    mask = a["mask"]
    if case.mask == "state" and case.kind % 2:  # the [T, N, D*H] view with stride 0 on T
        mask = mask.expand(T, N, D * H)
    # outputs: strided views of wider poisoned buffers
    state = torch.full((T, N, D * H + 3), nan, device=DEVICE)[..., 2:2 + D * H]
    cell = torch.full((T, N, D * H), nan, device=DEVICE)
    zs = torch.full((T, N, D * 4 * H), nan, device=DEVICE)
    assert lstm_seq_fwd.forward_sequence(xp, a["R"], a["h0"], a["c0"], mask, a["p"], state,
                                         cell, zs, **o)
    _close(state, s64, tol, "state")
    _close(cell, c64, tol, "cell")
    _close(zs, z64, tol, "zState")
    # backward, from the float64 forward's outputs (independent of the forward kernel)
    dA = torch.full((T, N, D * 4 * H), nan, device=DEVICE, dtype=dtype)
    dh0 = torch.full((N, D * H), nan, device=DEVICE)
    dc0 = torch.full((N, D * H), nan, device=DEVICE)
    dp = torch.full((D, 4 * H), nan, device=DEVICE) if case.peep else None
    hp = torch.full((T, N, D * H), nan, device=DEVICE)
    z_in, c_in = z64.to(dtype).to(DEVICE), c64.to(dtype).to(DEVICE)
    assert lstm_seq_bwd.backward_sequence(a["dstate"], z_in, c_in, a["R"], a["c0"], mask,
                                          a["p"], a["dcell"], a["dhf"], a["dcf"], dA, dh0,
                                          dc0, **o, dpeep=dp, hprev=hp)
    # hprev: h[t_prev] * m[t] at every step but each direction's first (left untouched)
    m64 = None if a64["mask"] is None else a64["mask"].expand(T, N, D * H)
    for d in range(D):
        cons, prod, first = step_shift(T, d == 1 if case.dirs == "bi" else case.dirs == "rev")
        part = slice(d * H, (d + 1) * H)
        want = s64[prod][..., part] * (1.0 if m64 is None else m64[cons][..., part])
        _close(hp[cons][..., part], want, tol, f"hprev[{d}]")
        assert torch.isnan(hp[first][..., part]).all(), "hprev's first step was written"
    assert dh0.dtype == dc0.dtype == f32
    _close(dA, gA["source"], tol, "dA")
    _close(dh0, gA["initState"], tol, "dh0")
    _close(dc0, gA["initCell"], tol, "dc0")
    res = dict(state=state, cell=cell, zState=zs, dA=dA, dh0=dh0, dc0=dc0)
    if case.peep:  # accumulated in the kernel
        _close(dp, g64["peephole"].reshape(D, 4 * H), tol, "dpeep")
        res["dpeep"] = dp
    return res


@pytest.mark.parametrize("sync", SYNCS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_kernels_float32(case, sync):
    _kernel_check(case, torch.float32, 1e-5, sync)


# relu / hardSigmoid / identity gates amplify a half rounding near a kink (or overflow float16):
# the half types run with sigmoid / tanh gates (every activation is covered in float32)
# one program per direction: the persistent launch (SYNC, all steps, the grid barrier, c / dc in
# registers, dh0 in the same launch) also runs under the interpreter
ONE_PROGRAM = [replace(CASES[7], tile=(32, 32, 16, 32)),
               replace(CASES[1], N=17, H=20, tile=(32, 32, 32, 16))]


@pytest.mark.parametrize("case", ONE_PROGRAM, ids=str)
def test_kernels_float32_one_launch(case):
    _kernel_check(case, torch.float32, 1e-5, True)


@pytest.mark.parametrize("case", [CASES[0], ONE_PROGRAM[0]], ids=str)
def test_without_prefetch(case, monkeypatch):
    # MPSGRAPH_LSTM_PREFETCH=0: each step loads its own read-only inputs (mask, peephole, c0,
    # dcell: every input `_step_inputs` reads), per step and in one persistent launch
    monkeypatch.setenv("MPSGRAPH_LSTM_PREFETCH", "0")
    _kernel_check(case, torch.float32, 1e-5, True if case.tile else None)


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[7], ONE_PROGRAM[1]], ids=str)
@pytest.mark.parametrize("resident", ["0", "1"])
def test_kernels_float32_tf32x3(case, resident, monkeypatch):
    # float32 runs "split" for H <= 256 (every case above) and Triton's "tf32x3" for larger H
    monkeypatch.setenv("MPSGRAPH_LSTM_FP32_DOT", "tf32x3")
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", resident)
    _kernel_check(case, torch.float32, 1e-5, True if case in ONE_PROGRAM else None)


def test_precision_choice(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_FP32_DOT", raising=False)
    prec = lstm_seq_fwd.precision
    assert (prec(torch.float32, False, 256), prec(torch.float32, False, 257)) == \
        ("split", "tf32x3")
    assert prec(torch.float32, True, 128) == prec(torch.bfloat16, False, 128) == "tf32"
    monkeypatch.setenv("MPSGRAPH_LSTM_FP32_DOT", "TF32x3")
    assert prec(torch.float32, False, 128) == "tf32x3"
    monkeypatch.setenv("MPSGRAPH_LSTM_FP32_DOT", "fast")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_FP32_DOT"):
        prec(torch.float32, False, 128)


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """x truncated to TF32 (what a TF32 tensor-core product reads of a float32 operand)."""
    return (x.view(torch.int32) & -0x2000).view(torch.float32)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, interpreted
def test_split_r():
    # split_r's kernel (interpreted on the CPU): hi and lo are TF32 values (the low 13 mantissa
    # bits clear), hi + lo = R to 2^-21 relative, and specials come out as a product needs them
    g = torch.Generator().manual_seed(5)
    R = torch.randn(2, 12, 3, generator=g) * torch.logspace(-30, 30, 3)
    R[0, 0, 0], R[0, 1, 0], R[0, 2, 0] = float("inf"), -float("inf"), float("nan")
    R[0, 3, 0] = 3.4e38  # truncation never overflows
    R = R.to(DEVICE)
    hi, s_rs = lstm_seq_fwd.split_r(R, "split")
    assert s_rs == R.numel() and hi.shape == R.shape and hi.is_contiguous()
    lo = hi.reshape(-1).as_strided((R.numel(),), (1,), s_rs).view(R.shape)
    for part in (hi, lo):  # (a NaN may keep any payload)
        ok = ~torch.isnan(part)
        assert torch.equal(_tf32(part)[ok], part[ok])
    fin = torch.isfinite(R)
    err = (R.double() - hi.double() - lo.double()).abs()[fin]
    assert (err <= 2.0 ** -21 * R.double().abs()[fin]).all()
    assert (err <= 2.0 ** -11 * (R.double() - _tf32(R).double()).abs()[fin]).all()
    assert torch.isfinite(hi[0, 3, 0])
    assert hi[0, 0, 0] == float("inf") and hi[0, 1, 0] == -float("inf")
    assert lo[0, 0, 0] == 0 and lo[0, 1, 0] == 0
    assert torch.isnan(hi[0, 2, 0] + lo[0, 2, 0])
    assert lstm_seq_fwd.split_r(R, "tf32x3") == (R, 0)


def test_split_product_accuracy():
    # the "split" product with TF32 tensor cores emulated (every operand truncated to TF32,
    # products and sums in float64): float32-grade accuracy, where one TF32 product is not
    g = torch.Generator().manual_seed(6)
    h = torch.randn(16, 256, generator=g)
    R = torch.randn(256, 64, generator=g) / 16
    exact = h.double() @ R.double()
    hi, s_rs = lstm_seq_fwd.split_r(R.to(DEVICE), "split")
    r_hi = hi.cpu().double()
    r_lo = hi.reshape(-1).as_strided((R.numel(),), (1,), s_rs).view(R.shape).cpu().double()
    h_hi = _tf32(h)  # tf32_split's high part; the TF32 product truncates the remainder too
    h_lo = _tf32(h - h_hi)
    split = h_hi.double() @ r_hi + (h_lo.double() @ r_hi + h_hi.double() @ r_lo)
    scale = (h.double().abs() @ R.double().abs()).max()
    err_split = ((split - exact).abs().max() / scale).item()
    err_tf32 = ((_tf32(h).double() @ _tf32(R).double() - exact).abs().max() / scale).item()
    assert err_split < 2e-6, err_split
    assert err_tf32 > 1e-4, err_tf32  # the check can fail


def test_prefetch_env(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_PREFETCH", raising=False)
    assert lstm_seq_fwd.prefetch()
    monkeypatch.setenv("MPSGRAPH_LSTM_PREFETCH", "0")
    assert not lstm_seq_fwd.prefetch()
    monkeypatch.setenv("MPSGRAPH_LSTM_PREFETCH", "no")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_PREFETCH"):
        lstm_seq_fwd.prefetch()


def test_interpreter_refuses_a_persistent_grid():
    if not lstm_seq_fwd.interpreting():
        pytest.skip("the kernels run compiled")
    with pytest.raises(ValueError, match="one program per direction"):
        _kernel_check(CASES[7], torch.float32, 1e-5, True)


HALF_CASES = [replace(CASES[i], smooth=True) for i in (0, 3, 7)]


@pytest.mark.parametrize("case", HALF_CASES, ids=str)
def test_kernels_bfloat16(case):
    _kernel_check(case, torch.bfloat16, 5e-2, None)


@pytest.mark.parametrize("sync", SYNCS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", [HALF_CASES[0], HALF_CASES[2]], ids=str)
def test_half_buffers_hold_the_rounded_float32_results(case, dtype, sync):
    # rnn.py hands the kernels output buffers of the input dtype: each value is rounded once by
    # its store, so they must hold exactly the float32 buffers' results rounded (the state read
    # back by the next step is rounded as its dot operand is anyway; the cell carry, also
    # between per-step launches, stays float32); the backward's hprev likewise
    a, _ = _inputs(case, dtype)
    T, N, H, D = case.T, case.N, case.H, case.D
    o = dict(reverse=case.dirs == "rev", bidirectional=case.dirs == "bi",
             blocks=gate_blocks(case.fgl), activations=case.acts, tiling=_tiling(case, dtype),
             sync=sync)
    x = a["x"].reshape(T * N, -1) @ a["W"].t() + a["b"]
    xp = x.reshape(T, N, D * 4 * H)
    nan = float("nan")
    runs = {}
    for bt in (torch.float32, dtype):
        outs = [torch.full((T, N, D * k * H), nan, device=DEVICE, dtype=bt) for k in (1, 1, 4)]
        assert lstm_seq_fwd.forward_sequence(xp, a["R"], a["h0"], a["c0"], a["mask"], a["p"],
                                             *outs, **o)
        runs[bt] = outs
    _, cell, zs = runs[dtype]  # the backward's inputs (the same for both)
    for bt in (torch.float32, dtype):
        hp = torch.full((T, N, D * H), nan, device=DEVICE, dtype=bt)
        dA = torch.full((T, N, D * 4 * H), nan, device=DEVICE, dtype=bt)
        dh0, dc0 = (torch.full((N, D * H), nan, device=DEVICE) for _ in range(2))
        assert lstm_seq_bwd.backward_sequence(a["dstate"], zs, cell, a["R"], a["c0"],
                                              a["mask"], a["p"], a["dcell"], a["dhf"],
                                              a["dcf"], dA, dh0, dc0, **o, hprev=hp)
        runs[bt] += [hp, dA]
    names = ("state", "cell", "zState", "hprev", "dA")
    for name, wide, half in zip(names, runs[torch.float32], runs[dtype]):
        assert half.dtype == dtype
        per_step = sync is False or (sync is None and lstm_seq_fwd.interpreting())
        # (per step, the cell is rounded by torch from its float32 carry buffer)
        want = wide.to(dtype) if name == "cell" and per_step else _store_rounded(wide, dtype)
        assert torch.equal(want.isnan(), half.isnan()), name  # (hprev's first step)
        assert torch.equal(torch.nan_to_num(want), torch.nan_to_num(half)), name


def _store_rounded(a, dtype):
    """float32 `a` as a Triton store into a `dtype` buffer rounds it: to nearest even on the GPU,
    but Triton's interpreter (3.9) truncates float32 -> bfloat16 (in every conversion, so in
    the dot operands too; float16 it rounds)."""
    if dtype == torch.bfloat16 and lstm_seq_fwd.interpreting():
        bits = a.float().view(torch.int32) & -65536  # the low 16 bits dropped
        return bits.view(torch.float32).to(dtype)  # (exact now)
    return a.to(dtype)


# ----------------------------------------------------------------------------------------------
# through rnn.lstm_forward / rnn.lstm_backward
# ----------------------------------------------------------------------------------------------


def _rnn_check(case: Case, dtype, tol, monkeypatch, persistent=True):
    ran = []
    for mod, name in ((lstm_seq_fwd, "forward_sequence"), (lstm_seq_bwd, "backward_sequence")):
        fn = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _fn=fn, _n=name, **k: ran.append(_n)
                            or _fn(*a, **k))
    a, a64 = _inputs(case, dtype)
    before = {k: v.clone() for k, v in a.items() if v is not None}
    (s64, c64, z64), g64, _ = _reference(case, a64)
    o = case.opts
    outs = rnn.lstm_forward(a["x"], a["R"], a["W"], a["b"], a["h0"], a["c0"], a["mask"],
                            a["p"], **o)
    for name, got, want in zip(("state", "cell", "zState"), outs, (s64, c64, z64)):
        assert got.dtype == dtype
        _close(got, want, tol, name)
    need = dict(need_b=case.b, need_peephole=case.peep, need_h0=case.h0, need_c0=case.c0)
    z_in, c_in = z64.to(dtype).to(DEVICE), c64.to(dtype).to(DEVICE)
    g = rnn.lstm_backward(a["x"], a["R"], a["dstate"], z_in, c_in, a["W"], a["b"], a["h0"],
                          a["c0"], a["mask"], a["p"], a["dhf"], a["dcf"], a["dcell"], **need,
                          **o)
    assert ran == (["forward_sequence", "backward_sequence"] if persistent else [])
    for k, v in before.items():  # the caller's tensors are left as they were
        assert torch.equal(a[k], v), k
    for k, want in g64.items():
        if want is None:
            assert g[k] is None, k
            continue
        assert g[k].dtype == dtype and g[k].shape == want.shape, k
        _close(g[k], want, tol, k)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[5], CASES[7]], ids=str)
def test_rnn_float32(case, triton_on, monkeypatch):
    _rnn_check(case, torch.float32, 1e-5, monkeypatch)


@pytest.mark.parametrize("path", ["step", "torch"])
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3], CASES[4]], ids=str)
def test_rnn_step_path(case, path, triton_on, monkeypatch):
    # MPSGRAPH_LSTM_KERNEL=step: one addmm (accumulating into the projection in place) and one
    # fused Triton gate kernel per step, the backward's dstate + masked carry summed in that
    # kernel; "torch": the same loop in plain torch ops
    monkeypatch.setenv("MPSGRAPH_LSTM_KERNEL", path)
    _rnn_check(case, torch.float32, 1e-5, monkeypatch, persistent=False)


def test_rnn_backward_tiled_on_its_own(triton_on, monkeypatch):
    # MPSGRAPH_LSTM_TILING_BWD: the backward kernel with another tiling than the forward's
    # (several row and unit tiles in one, one program in the other)
    seen = []
    run = lstm_seq_bwd._bwd_seq_kernel.run

    def spy(*a, **kw):
        seen.append((kw["BLOCK_N"], kw["BLOCK_U"]))
        return run(*a, **kw)

    monkeypatch.setattr(lstm_seq_bwd._bwd_seq_kernel, "run", spy)
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING", "16,16,16,16")
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING_BWD", "32,32,32,32")
    _rnn_check(CASES[7], torch.float32, 1e-5, monkeypatch)
    assert set(seen) == {(32, 32)}


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 6e-2), (torch.float16, 1e-2)])
@pytest.mark.parametrize("case", HALF_CASES[:2], ids=str)
def test_rnn_half(case, dtype, tol, triton_on, monkeypatch):
    _rnn_check(case, dtype, tol, monkeypatch)


# ----------------------------------------------------------------------------------------------
# dispatch and planning
# ----------------------------------------------------------------------------------------------


def test_kernel_path_env(triton_on, monkeypatch):
    case = CASES[6]
    a, a64 = _inputs(case)
    want = rnn.lstm_forward(a64["x"], a64["R"], a64["W"], a64["b"], **case.opts)[0]
    calls = []
    fn = lstm_seq_fwd.forward_sequence
    monkeypatch.setattr(lstm_seq_fwd, "forward_sequence",
                        lambda *x, **k: calls.append(1) or fn(*x, **k))
    for path, persistent in (("step", False), ("torch", False), ("persistent", True)):
        monkeypatch.setenv("MPSGRAPH_LSTM_KERNEL", path)
        calls.clear()
        got = rnn.lstm_forward(a["x"], a["R"], a["W"], a["b"], **case.opts)[0]
        assert bool(calls) == persistent, path
        _close(got, want, 1e-5, path)
    monkeypatch.setenv("MPSGRAPH_LSTM_KERNEL", "bogus")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_KERNEL"):
        rnn.lstm_forward(a["x"], a["R"], a["W"], a["b"], **case.opts)


def test_plan(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING_BWD", raising=False)
    cpu = torch.device("cpu")
    shapes = [(64, 256, 1), (8, 128, 1), (64, 1024, 1), (256, 512, 1), (64, 512, 2)]
    for N, H, D in shapes:
        for dt in (torch.float32, torch.bfloat16):
            t = lstm_seq_fwd.plan(N, H, D, cpu, dt, max_programs=132)
            assert t is not None, (N, H, D)
            assert t.programs * D <= 132
            assert min(t.block_n, t.block_u, t.block_k_fwd, t.block_k_bwd) >= 16
            assert t.tiles_n * t.block_n >= N and t.tiles_u * t.block_u >= H
    # the measured choices in the latency regime (N <= 64): R resident in the most kernels,
    # then the narrowest BLOCK_N, then the fewest programs
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_FP32_DOT", raising=False)

    def bnu(N, H, dt, tf32=False):
        t = lstm_seq_fwd.plan(N, H, 1, cpu, dt, max_programs=132, allow_tf32=tf32)
        return t.block_n, t.block_u

    assert bnu(64, 256, torch.bfloat16) == (16, 32)
    assert bnu(64, 256, torch.float32) == (16, 32)
    assert bnu(64, 256, torch.float32, tf32=True) == (16, 16)  # both kernels resident only so
    assert bnu(8, 128, torch.float32) == bnu(8, 128, torch.bfloat16) == (16, 32)
    assert bnu(64, 1024, torch.bfloat16) == (16, 32)
    t = lstm_seq_fwd.plan(64, 512, 2, cpu, torch.bfloat16, max_programs=132)
    assert (t.block_n, t.block_u) == (16, 32)  # both kernels resident, 2 x 64 programs
    assert all(lstm_seq_fwd.r_resident(512, t, torch.bfloat16, "tf32", b) for b in (0, 1))
    # N > 64: the narrowest BLOCK_U, then the widest BLOCK_N
    assert bnu(256, 512, torch.float32) == bnu(256, 512, torch.bfloat16) == (64, 16)
    # the measured chunk sizes, warps and pipeline depths (forward, backward)
    t = lstm_seq_fwd.plan(64, 1024, 1, cpu, torch.bfloat16, max_programs=132)
    assert (t.block_k_fwd, t.block_k_bwd, t.num_warps, t.num_stages, t.num_stages_bwd) == \
        (128, 256, 4, 3, 3)
    t = lstm_seq_fwd.plan(256, 512, 1, cpu, torch.bfloat16, max_programs=132)
    assert (t.block_n, t.block_k_fwd, t.block_k_bwd, t.num_stages, t.num_stages_bwd) == \
        (64, 64, 128, 3, 3)
    t = lstm_seq_fwd.plan(64, 256, 1, cpu, torch.float32, max_programs=132)
    assert (t.block_k_fwd, t.block_k_bwd, t.num_warps, t.num_stages, t.num_stages_bwd) == \
        (32, 64, 4, 3, 3)
    assert lstm_seq_fwd._tiling(64, 256, 64, 64, 4).num_stages == 1  # 72 KiB per stage
    assert lstm_seq_fwd._stages(1 << 20) == 1
    # too large to keep every program co-resident: no plan (the caller uses the step path)
    assert lstm_seq_fwd.plan(4096, 4096, 2, cpu, max_programs=132) is None
    assert lstm_seq_fwd.plan(0, 16, 1, cpu) is None
    # cached per arguments and knob values: the same answer object, until a knob changes
    assert lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132) is \
        lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132)
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING", "32,16,32,64,8")
    t = lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132)
    assert (t.block_n, t.block_u, t.block_k_fwd, t.block_k_bwd, t.num_warps) == \
        (32, 16, 32, 64, 8)
    assert t.programs == 2 * 16
    # the backward kernel's own override (else the shared one)
    assert lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132, backward=True) == t
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING_BWD", "16,64")
    tb = lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132, backward=True)
    assert (tb.block_n, tb.block_u) == (16, 64)
    assert lstm_seq_fwd.plan(64, 256, 1, cpu, max_programs=132) == t
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING_BWD", "16,x")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_TILING_BWD"):
        lstm_seq_fwd.plan(64, 256, 1, cpu, backward=True)
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING_BWD")
    monkeypatch.setenv("MPSGRAPH_LSTM_TILING", "32,12")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_TILING"):
        lstm_seq_fwd.plan(64, 256, 1, cpu)


def test_launch_retries_with_fewer_stages():
    from triton.runtime.errors import OutOfResources

    calls = []

    class Kernel:  # out of shared memory above `fits` stages
        def __init__(self, fits):
            self.fits = fits

        def __getitem__(self, grid):
            def run(*args, num_stages, **kw):
                calls.append(num_stages)
                if num_stages > self.fits:
                    raise OutOfResources(300000, 232448, "shared memory")
            return run

    meta = lstm_seq_fwd.launch(Kernel(1), (1,), (0,), {"num_stages": 3, "X": 1})
    assert calls == [3, 2, 1] and meta == {"num_stages": 1, "X": 1}
    calls.clear()
    with pytest.raises(OutOfResources):
        lstm_seq_fwd.launch(Kernel(0), (1,), (0,), {"num_stages": 2})
    assert calls == [2, 1]


def test_empty_is_not_run():
    e = torch.empty(0, 3, 20, device=DEVICE)
    R = torch.zeros(1, 20, 5, device=DEVICE)
    s = torch.empty(0, 3, 5, device=DEVICE)
    assert not lstm_seq_fwd.forward_sequence(e, R, None, None, None, None, s, s, e,
                                             reverse=False, bidirectional=False,
                                             blocks=(0, 1, 2, 3), activations=(3, 3, 2, 3, 2))


# ----------------------------------------------------------------------------------------------
# R resident (the default; MPSGRAPH_LSTM_R_RESIDENT=0 turns it off): R loaded once per launch,
# one dot per gate and step
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def launches(monkeypatch):
    """Records (kernel, R_RESIDENT, RES_K) of every launch of the two persistent kernels."""
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_FP32_DOT", raising=False)
    seen = []
    for name, k in (("fwd", lstm_seq_fwd._fwd_seq_kernel), ("bwd", lstm_seq_bwd._bwd_seq_kernel)):
        def run(*a, _run=k.run, _name=name, **kw):
            seen.append((_name, kw["R_RESIDENT"], kw["RES_K"]))
            return _run(*a, **kw)
        monkeypatch.setattr(k, "run", run)
    return seen


def _res_k(case: Case):
    """The K extents of the resident tiles (forward, backward) of a case."""
    p2 = 1 << max(0, case.H - 1).bit_length()
    return max(16, p2), max(16, 4 * p2)


def _resident_check(case: Case, dtype, tol, sync, monkeypatch, launches):
    """The chunked path, then the resident one: each against the float64 reference, and the
    two against each other; the resident one (the default) must have run in every launch."""
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "0")
    base = _kernel_check(case, dtype, tol, sync)
    assert launches and not any(r for _, r, _ in launches)
    launches.clear()
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT")
    res = _kernel_check(case, dtype, tol, sync)
    kf, kb = _res_k(case)
    assert {(n, r, k) for n, r, k in launches} == {("fwd", True, kf), ("bwd", True, kb)}
    for name, want in base.items():
        _close(res[name], want.double().cpu(), tol, f"resident vs chunked {name}")


# one 16-row tile of N and a BLOCK_U that fit every cap in float32 "tf32x3" (BLOCK_N * pow2(4H)
# <= 2048): H <= 32; several tiles along N and H (N = 17, H = 20: padding masks on both, K
# padded 20 -> 32 forward, 80 -> 128 backward); the chunked reference run uses 16-wide chunks
RES_CASES = [replace(c, tile=(16, 16, 16, 16)) for c in CASES[:7]] + [
    replace(CASES[7], tile=(16, 16, 16, 16)),
    replace(CASES[8], tile=(16, 16, 16, 16)),
    replace(CASES[9], H=32, tile=(16, 32, 16, 16)),
]


@pytest.mark.parametrize("case", RES_CASES, ids=str)
def test_resident_float32(case, monkeypatch, launches):
    _resident_check(case, torch.float32, 1e-5, None, monkeypatch, launches)


@pytest.mark.parametrize("case", [replace(CASES[7], N=9, tile=(16, 32, 16, 16))], ids=str)
def test_resident_float32_one_launch(case, monkeypatch, launches):
    # one program per direction: the persistent launch, R loaded once for all T steps
    _resident_check(case, torch.float32, 1e-5, True, monkeypatch, launches)
    assert len(launches) == 2


@pytest.mark.parametrize("case", [replace(HALF_CASES[i], tile=(16, 16, 16, 16))
                                  for i in (0, 2)], ids=str)
def test_resident_bfloat16(case, monkeypatch, launches):
    _resident_check(case, torch.bfloat16, 5e-2, None, monkeypatch, launches)


def test_resident_tf32_cap(monkeypatch, launches):
    # "tf32" (one product per dot) allows a larger operand than "tf32x3": BLOCK_N = 32 with
    # the backward's K = 128 fits only there (the interpreter computes every dot in float32)
    case = replace(CASES[8], tile=(32, 16, 16, 16))
    monkeypatch.setenv("MPSGRAPH_LSTM_FP32_DOT", "tf32")
    # compiled, "tf32" dots round their operands to 10-bit mantissas
    _resident_check(case, torch.float32, 1e-5 if lstm_seq_fwd.interpreting() else 1e-2,
                    None, monkeypatch, launches)
    launches.clear()
    monkeypatch.setenv("MPSGRAPH_LSTM_FP32_DOT", "tf32x3")
    _kernel_check(case, torch.float32, 1e-5, None)
    assert {(n, r) for n, r, _ in launches} == {("fwd", True), ("bwd", False)}


def test_resident_through_rnn(triton_on, monkeypatch, launches):
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "1")
    _rnn_check(CASES[0], torch.float32, 1e-5, monkeypatch)
    assert {(n, r) for n, r, _ in launches} == {("fwd", True), ("bwd", True)}


def test_r_resident_caps(monkeypatch):
    f32, bf16 = torch.float32, torch.bfloat16

    def rr(H, bn, bu, dt=f32, prec="tf32x3", backward=False):
        return lstm_seq_fwd.r_resident(H, lstm_seq_fwd._tiling(64, H, bn, bu, 4), dt, prec,
                                       backward)

    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "0")
    assert rr(5, 16, 16) == 0
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT", raising=False)
    assert (rr(5, 16, 16), rr(5, 16, 16, backward=True)) == (16, 32)  # default on
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "1")
    assert (rr(5, 16, 16), rr(5, 16, 16, backward=True)) == (16, 32)
    assert (rr(20, 16, 16), rr(20, 16, 16, backward=True)) == (32, 128)
    # (N=64, H=256, 16x16) and (N=8, H=128, 16x32 / 16x16): the benchmark's shapes
    assert (rr(256, 16, 16), rr(256, 16, 16, backward=True)) == (0, 0)
    assert (rr(256, 16, 16, prec="tf32"), rr(256, 16, 16, prec="tf32", backward=True)) == \
        (256, 1024)
    assert (rr(256, 16, 16, bf16), rr(256, 16, 16, bf16, backward=True)) == (256, 1024)
    assert (rr(256, 16, 32, bf16), rr(256, 16, 32, bf16, backward=True)) == (256, 1024)
    assert rr(256, 16, 32, prec="tf32") == 0  # the tile cap
    # half: 128 KiB tiles (H=512 16x32: one program per SM), forward K <= 512, backward operand
    assert (rr(512, 16, 32, bf16), rr(512, 16, 32, bf16, backward=True)) == (512, 2048)
    assert (rr(512, 32, 32, bf16), rr(512, 32, 32, bf16, backward=True)) == (512, 0)
    assert (rr(1024, 16, 16, bf16), rr(1024, 16, 16, bf16, backward=True)) == (0, 0)
    # "split": hi and lo tiles (twice the shared memory), the operand cap of "tf32x3"
    assert (rr(128, 16, 32, prec="split"), rr(128, 16, 32, prec="split", backward=True)) == \
        (128, 0)
    assert (rr(256, 16, 16, prec="split"), rr(128, 16, 64, prec="split")) == (0, 0)
    assert (rr(128, 16, 32), rr(128, 16, 32, backward=True)) == (128, 0)
    assert (rr(128, 16, 16, bf16), rr(128, 16, 16, bf16, backward=True)) == (128, 512)
    assert rr(5, 16, 16, prec="ieee") == 0
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "yes")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_R_RESIDENT"):
        rr(5, 16, 16)


# ----------------------------------------------------------------------------------------------
# the cluster path (kernels/lstm_cluster.py; Hopper+ GPUs only: it is CUDA, not Triton): taken
# by the same wrappers for float32 calls with N <= 16 and H in 32..256 (a multiple of 32) when
# no tiling / launch mode is asked for; checked against the float64 reference like the rest
# ----------------------------------------------------------------------------------------------

CLUSTER = CUDA and torch.cuda.get_device_capability()[0] >= 9
CLUSTER_CASES = [
    Case(0, peep=True, mask="seq", h0=True, c0=True, dcell=True, dhf=True, dcf=True, T=5, N=3,
         H=64),
    Case(1, fgl=True, mask="state", dirs="rev", c0=True, b=False, dhf=True, T=4, N=8, H=128),
    Case(2, peep=True, dirs="bi", h0=True, W=False, dcell=True, dcf=True, T=3, N=16, H=64),
    Case(3, fgl=True, peep=True, mask="seq", dirs="bi", dhf=True, dcf=True, T=6, N=5, H=128),
    Case(4, mask="state", h0=True, c0=True, W=False, b=False, dcell=True, T=3, N=1, H=96),
    Case(2, fgl=True, dirs="rev", peep=True, mask="seq", h0=True, T=4, N=9, H=256),
    Case(4, peep=True, mask="state", dirs="bi", c0=True, dhf=True, T=5, N=4, H=64),
    Case(3, smooth=True, T=7, N=8, H=128),  # the default LSTM, the benchmark's (N, H)
    Case(3, T=1, N=2, H=64),
    Case(3, smooth=True, mask="seq", dirs="bi", h0=True, c0=True, dcell=True, T=9, N=16,
         H=256),
]
# R's scale 0.4 (the small-H cases') makes |h| reach 150-600 at H >= 128 with the unbounded
# activations, where float32 itself (torch's float32 LSTM) misses the float64 reference by
# 3-6x the tolerance; 0.1 keeps the pre-activations O(1)
CLUSTER_CASES = [replace(c, r_scale=0.1) for c in CLUSTER_CASES]


@pytest.fixture
def cluster_runs(monkeypatch):
    """Counts the cluster path's forward and backward calls."""
    from mpsgraph.backends.torch.kernels import lstm_cluster

    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_CFG", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_SIZE", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_TILING", raising=False)
    seen = []
    for name in ("forward", "backward"):
        fn = getattr(lstm_cluster, name)
        monkeypatch.setattr(lstm_cluster, name,
                            lambda *a, _fn=fn, _n=name, **k: seen.append(_n) or _fn(*a, **k))
    return seen


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.parametrize("case", CLUSTER_CASES, ids=str)
def test_cluster_float32(case, cluster_runs):
    # (H = 96: U = 12 at 8 CTAs has no lane grouping; the default is the 4-CTA cluster)
    _kernel_check(case, torch.float32, 1e-5, None)
    assert cluster_runs == ["forward", "backward"]


# every cluster size the kernels compile for (kernels/lstm_cluster.py SIZES), at shapes where
# several fit; H = 32 fits 4, 2 and 1 CTAs only
SIZE_CASES = [CLUSTER_CASES[0], CLUSTER_CASES[3], CLUSTER_CASES[4], CLUSTER_CASES[6],
              replace(CLUSTER_CASES[7], N=16, H=64),
              Case(1, peep=True, mask="seq", dirs="bi", h0=True, c0=True, dcell=True, dhf=True,
                   dcf=True, T=6, N=7, H=32, r_scale=0.1)]


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.parametrize("case", SIZE_CASES, ids=str)
def test_cluster_sizes(case, cluster_runs, monkeypatch):
    from mpsgraph.backends.torch.kernels import lstm_cluster

    sizes = lstm_cluster.sizes(case.N, case.H)
    assert len(sizes) >= 2, sizes
    for cl in sizes:
        monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_SIZE", str(cl))
        assert lstm_cluster.config(case.N, case.H).cl == cl
        _kernel_check(case, torch.float32, 1e-5, None)
    assert cluster_runs == ["forward", "backward"] * len(sizes)


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.parametrize("case", [CLUSTER_CASES[0], CLUSTER_CASES[3]], ids=str)
def test_cluster_through_rnn(case, cluster_runs, triton_on, monkeypatch):
    _rnn_check(case, torch.float32, 1e-5, monkeypatch)
    assert cluster_runs == ["forward", "backward"]


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
def test_cluster_off_and_other_configs(cluster_runs, monkeypatch):
    case = CLUSTER_CASES[1]
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER", "0")  # the Triton kernels
    _kernel_check(case, torch.float32, 1e-5, None)
    assert cluster_runs == []
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER")
    for cfg in ("2,8,2,16", "4,16,8,16"):  # other thread shapes of the same kernels
        monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_CFG", cfg)
        _kernel_check(case, torch.float32, 1e-5, None)
    assert cluster_runs == ["forward", "backward"] * 2
