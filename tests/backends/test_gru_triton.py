"""The fused Triton GRU / single-gate RNN kernels (kernels/gru_seq.py through
backends/torch/gru_fused.py) against the float64 oracles of tests/oracles/gru_f64.py (plain
loops from SPEC 4, nothing shared with the kernels): forward state and zState, and every
gradient (source, recurrentWeight, inputWeight, bias, initState, secondaryBias), each option
alone and a few pairs, float32 tightly, bfloat16 / float16 loosely. Outputs are poisoned with
NaN first (torch.empty is replaced), so an unwritten element fails.

On the CPU the kernels run under TRITON_INTERPRET=1 (one launch per step and phase); the
`gpu` tests run the persistent launches over the benchmark shapes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import interpreter_only, triton_kernels  # noqa: E402

(gru_seq,) = triton_kernels("gru_seq")

from mpsgraph.backends.torch import gru_fused  # noqa: E402
from mpsgraph.ops.rnn import GatedRNNAttrs  # noqa: E402
from oracles.gru_f64 import gru_grad_ref, gru_ref, rnn_grad_ref, rnn_ref  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
GRADS = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias")


@pytest.fixture(autouse=True)
def triton_on(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_NO_TRITON", raising=False)
    monkeypatch.delenv("MPSGRAPH_GRU_KERNEL", raising=False)
    monkeypatch.delenv("MPSGRAPH_GRU_TILING", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_R_RESIDENT", raising=False)
    monkeypatch.delenv("MPSGRAPH_LSTM_FP32_DOT", raising=False)
    if not CUDA:
        monkeypatch.setenv("TRITON_INTERPRET", "1")


@dataclass(frozen=True)
class Case:
    gates: int = 3
    rgf: bool = False          # resetGateFirst
    ra: bool = False           # resetAfter
    b2: bool = False           # secondaryBias (read with resetAfter)
    flip: bool = False         # flipZ
    acts: tuple = (3, 3, 2)    # GRU (f_z, f_r, f_o); single gate (f,)
    dirs: str = "fwd"          # fwd | rev | bi
    mask: str = "none"         # none | seq | state
    h0: bool = True
    W: bool = True
    b: bool = True
    dhf: bool = True
    T: int = 3
    N: int = 2
    H: int = 5
    I: int = 4

    @property
    def D(self):
        return 2 if self.dirs == "bi" else 1

    def attrs(self, n_outputs=2):
        D, H, G = self.D, self.H, self.gates * self.H
        shapes = (("recurrentWeight", (D, G, H)), ("initState", (self.N, D * H)),
                  ("secondaryBias", (D * H,)))
        outs = ("source", "recurrentWeight", "inputWeight", "bias", "initState")
        if self.gates == 3:
            outs += ("secondaryBias",)
        if not self.W:
            outs = tuple(o for o in outs if o != "inputWeight")
        return GatedRNNAttrs(self.gates, self.dirs == "rev", self.dirs == "bi",
                             self.gates == 3 and self.rgf, self.gates == 3 and self.ra,
                             self.gates == 3 and self.flip, tuple(self.acts), self.T, self.N,
                             H, n_outputs, self.mask == "seq", outs, shapes)


def _inputs(c: Case, seed: int):
    rng = np.random.default_rng(seed)
    D, H, G, T, N = c.D, c.H, c.gates * c.H, c.T, c.N
    f = lambda *s: rng.standard_normal(s)  # noqa: E731
    # weights ~ N(0, min(0.5, 1/sqrt(fan_in))^2): a contracting recurrence at every size (a
    # relu RNN with larger weights explodes over the long GPU sequences)
    sr, sw = min(0.5, H ** -0.5), min(0.5, c.I ** -0.5)
    v = dict(x=f(T, N, c.I) if c.W else f(T, N, D * G), R=sr * f(D, G, H),
             W=sw * f(D * G, c.I) if c.W else None, b=0.3 * f(D * G) if c.b else None,
             h0=f(N, D * H) if c.h0 else None,
             b2=0.3 * f(D * H) if (c.b2 and c.gates == 3) else None,
             dstate=f(T, N, D * H), dhf=f(N, D * H) if c.dhf else None)
    if c.mask == "seq":
        v["mask"] = (rng.random((T, N, D * H)) < 0.7).astype(np.float64)
    elif c.mask == "state":
        v["mask"] = (rng.random((N, D * H)) < 0.7).astype(np.float64)
    else:
        v["mask"] = None
    return v


def _oracle(c: Case, v):
    o = dict(reverse=c.dirs == "rev", bidirectional=c.dirs == "bi")
    if c.gates == 1:
        st, zs = rnn_ref(v["x"], v["R"], v["W"], v["b"], v["h0"], v["mask"], **o,
                         activation=c.acts[0])
        g = rnn_grad_ref(v["x"], v["R"], v["dstate"], v["W"], v["b"], v["h0"], v["mask"],
                         v["dhf"], zstate=zs, **o, activation=c.acts[0])
    else:
        go = dict(o, reset_gate_first=c.rgf, reset_after=c.ra, flip_z=c.flip,
                  activations=tuple(c.acts))
        st, zs = gru_ref(v["x"], v["R"], v["W"], v["b"], v["h0"], v["mask"], v["b2"], **go)
        g = gru_grad_ref(v["x"], v["R"], v["dstate"], v["W"], v["b"], v["h0"], v["mask"],
                         v["b2"], v["dhf"], zstate=zs, out_fwd=st, **go)
    return st, zs, g


@pytest.fixture
def poison(monkeypatch):
    """torch.empty in the fused glue and the kernel wrappers returns NaN-filled tensors."""
    real = torch.empty

    def empty(*a, **k):
        t = real(*a, **k)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", empty)


_ORACLE: dict = {}  # (case, seed) -> oracle results (the GPU shapes reuse them per dtype)


def _run(c: Case, dtype=torch.float32, seed=0):
    v = _inputs(c, seed)
    if (c, seed) not in _ORACLE:
        _ORACLE.clear()  # (one at a time: the large shapes' results are big)
        _ORACLE[(c, seed)] = _oracle(c, v)
    st, zs, g = _ORACLE[(c, seed)]
    T_ = lambda a: None if a is None else torch.tensor(a, dtype=dtype, device=DEVICE)  # noqa
    a = c.attrs()
    out = gru_fused.forward(T_(v["x"]), T_(v["R"]), T_(v["W"]), T_(v["b"]), T_(v["h0"]),
                            T_(v["mask"]), T_(v["b2"]), a)
    assert out is not None, "the fused kernels declined"
    ours_f = [t.double().cpu().numpy() for t in out]
    # the backward reads the oracle's forward outputs (isolates it from the forward's error)
    gb = gru_fused.backward(T_(v["x"]), T_(v["R"]), T_(v["dstate"]), T_(zs), T_(st),
                            T_(v["dhf"]), T_(v["W"]), T_(v["b"]), T_(v["h0"]), T_(v["mask"]),
                            T_(v["b2"]), a)
    assert gb is not None, "the fused kernels declined (backward)"
    gb = gb if isinstance(gb, tuple) else (gb,)
    ours_g = {n: t.double().cpu().numpy() for n, t in zip(a.outputs, gb)}
    return (st, zs, g), (ours_f, ours_g)


def _close(got, ref, tol, atol, name, max_bad):
    if max_bad > 0 and ref.size:  # (long bfloat16 sequences: a tiny fraction of outliers)
        bad = ~np.isclose(got, ref, rtol=tol, atol=atol)
        if bad.mean() <= max_bad and np.isfinite(got).all():
            return
    np.testing.assert_allclose(got, ref, rtol=tol, atol=atol, err_msg=name)


def _check(ref, ours, tol, max_bad=0.0):
    (st, zs, g), (of, og) = ref, ours
    _close(of[0], st, tol, tol, "state", max_bad)
    _close(of[1], zs, tol, tol, "zState", max_bad)
    for n, v in og.items():
        r = np.asarray(g[n]).reshape(v.shape)
        scale = max(1.0, float(np.abs(r).max()))
        _close(v, r, tol, tol * scale, n, max_bad)


BASE = Case()
CASES = {
    "default": BASE,
    "reverse": replace(BASE, dirs="rev"),
    "bidirectional": replace(BASE, dirs="bi"),
    "resetGateFirst": replace(BASE, rgf=True),
    "resetAfter": replace(BASE, ra=True),
    "resetAfter_b2": replace(BASE, ra=True, b2=True),
    "flipZ": replace(BASE, flip=True),
    "acts": replace(BASE, acts=(4, 2, 1)),
    "acts2": replace(BASE, acts=(2, 0, 3)),
    "mask_seq": replace(BASE, mask="seq"),
    "mask_state": replace(BASE, mask="state"),
    "noW": replace(BASE, W=False),
    "nob": replace(BASE, b=False),
    "noh0": replace(BASE, h0=False, dhf=False),
    "N1_T1": replace(BASE, N=1, T=1),
    "H1": replace(BASE, H=1, N=1),
    # pairs
    "ra_b2_bi": replace(BASE, ra=True, b2=True, dirs="bi"),
    "ra_mask_rev": replace(BASE, ra=True, b2=True, mask="seq", dirs="rev"),
    "flip_rgf_mask": replace(BASE, flip=True, rgf=True, mask="state"),
    "bi_mask_noW": replace(BASE, dirs="bi", mask="seq", W=False),
    "ra_flip_rgf": replace(BASE, ra=True, flip=True, rgf=True, b2=True),
    "bi_flip_acts": replace(BASE, dirs="bi", flip=True, acts=(3, 4, 1)),
    # single gate
    "rnn_tanh": replace(BASE, gates=1, acts=(2,)),
    "rnn_relu": replace(BASE, gates=1, acts=(1,)),
    "rnn_sigmoid_rev": replace(BASE, gates=1, acts=(3,), dirs="rev"),
    "rnn_hard_bi_mask": replace(BASE, gates=1, acts=(4,), dirs="bi", mask="seq"),
    "rnn_none_noW_state": replace(BASE, gates=1, acts=(0,), W=False, mask="state", h0=False),
    "rnn_tanh_nob": replace(BASE, gates=1, acts=(2,), b=False, dhf=False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_float32_against_oracle(name, poison):
    c = CASES[name]
    _check(*_run(c), tol=2e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", ["default", "resetAfter_b2", "bi_mask_noW", "rnn_tanh"])
def test_half_types_loosely(name, dtype, poison):
    c = CASES[name]
    _check(*_run(c, dtype), tol=6e-2 if dtype == torch.bfloat16 else 1e-2)


def test_two_tiles_and_chunks(monkeypatch, poison):
    """H larger than one tile (several programs per direction) with the K-chunk loop (R not
    resident) and with the resident tiles."""
    c = replace(BASE, H=20, N=3, T=2, dirs="bi", mask="seq")
    monkeypatch.setenv("MPSGRAPH_GRU_TILING", "16,16")
    _check(*_run(c), tol=2e-5)
    monkeypatch.setenv("MPSGRAPH_LSTM_R_RESIDENT", "0")
    _check(*_run(replace(c, ra=True, b2=True)), tol=2e-5)
    _check(*_run(replace(c, gates=1, acts=(2,))), tol=2e-5)


def test_env_torch_declines(monkeypatch):
    monkeypatch.setenv("MPSGRAPH_GRU_KERNEL", "torch")
    v = _inputs(BASE, 0)
    T_ = lambda a: None if a is None else torch.tensor(a, dtype=torch.float32)  # noqa
    assert gru_fused.forward(T_(v["x"]), T_(v["R"]), T_(v["W"]), T_(v["b"]), T_(v["h0"]),
                             None, None, BASE.attrs()) is None
    monkeypatch.setenv("MPSGRAPH_GRU_KERNEL", "bogus")
    with pytest.raises(ValueError, match="MPSGRAPH_GRU_KERNEL"):
        gru_fused.enabled(torch.device("cpu"))


def test_float64_declines():
    v = _inputs(BASE, 0)
    T_ = lambda a: None if a is None else torch.tensor(a, dtype=torch.float64)  # noqa
    assert gru_fused.forward(T_(v["x"]), T_(v["R"]), T_(v["W"]), T_(v["b"]), T_(v["h0"]),
                             None, None, BASE.attrs()) is None


# ------------------------------------------------------------------------------- GPU shapes
GPU_SHAPES = [(100, 64, 256, 256, "fwd"), (50, 8, 128, 128, "fwd"),
              (100, 64, 1024, 1024, "fwd"), (200, 256, 512, 512, "fwd"),
              (128, 1, 384, 256, "bi")]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("kind", ["gru_ra", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s[:4])) + s[4])
def test_gpu_shapes(shape, kind, dtype):
    T, N, I, H, dirs = shape
    # without inputWeight (source = x'): the oracle's dx / dW are unblocked einsums, minutes
    # at these sizes; the projection GEMMs are checked by the small cases and rnn_gpu.py
    del I
    c = Case(T=T, N=N, H=H, dirs=dirs, W=False, gates=1 if kind.startswith("rnn") else 3,
             acts=(2,) if kind == "rnn_tanh" else (1,) if kind == "rnn_relu" else (3, 3, 2),
             ra=kind == "gru_ra", b2=kind == "gru_ra", rgf=kind == "gru_ra")
    if kind == "rnn_relu":
        c = replace(c, h0=True)
    ref, ours = _run(c, dtype, seed=1)
    # the oracle is a float64 loop: slow but fine at these sizes on the host
    if dtype == torch.float32:
        _check(ref, ours, tol=3e-3)
    else:
        _check(ref, ours, tol=8e-2, max_bad=1e-3)


@pytest.mark.parametrize("sync", [True, False] if CUDA else [True])
@pytest.mark.parametrize("name", ["default", "resetAfter_b2", "flip_rgf_mask", "bi_mask_noW",
                                  "rnn_hard_bi_mask", "ra_mask_rev"])
def test_launch_modes(name, sync, monkeypatch, poison):
    """sync=True: the persistent launch (all steps and phases in one launch, grid barriers),
    which runs under the interpreter too when each direction has one program (its barriers
    then wait for nobody else); sync=False (CUDA): one launch per step and phase, as under the
    interpreter. Both against the oracle."""
    import functools

    fwd, bwd = gru_seq.forward_sequence, gru_seq.backward_sequence
    monkeypatch.setattr(gru_seq, "forward_sequence", functools.partial(fwd, sync=sync))
    monkeypatch.setattr(gru_seq, "backward_sequence", functools.partial(bwd, sync=sync))
    _check(*_run(CASES[name]), tol=2e-5)
    if CUDA:  # several programs per direction (the interpreter's persistent launch takes one)
        _check(*_run(replace(CASES[name], H=40, N=20)), tol=2e-5)


@pytest.mark.parametrize("name", ["default", "ra_b2_bi", "rnn_tanh"])
def test_tf32_opt_in(name, poison):
    """torch.backends.cuda.matmul.allow_tf32 (what allow_tf32=True sets) selects TF32 dots for
    float32: results within TF32's rounding (exact products under the interpreter)."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        assert gru_seq.precision(torch.float32, gru_fused._tf32(), 5) == "tf32"
        _check(*_run(CASES[name]), tol=5e-3)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


@interpreter_only
def test_tuned_tiling_runs_forward_and_backward(monkeypatch):
    """An "ours:BN,BU" choice of the tuner (gru_route.py) runs both kernels under that tiling:
    the forward's tuning picks it (its candidates stubbed to offer one, since on the CPU no
    alternative tilings are offered), the Gradients op looks the same key up, and a compiled
    training step still matches the float64 oracle."""
    import mpsgraph as mg
    from mpsgraph.backends.torch import autotune, gru_route

    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "1")
    autotune.clear()
    autotune.set_timer(lambda fn, dev: {"ours": 2.0, "cudnn": 3.0, "ours:16,16": 1.0}[
        (fn(), seen[-1])[1]])
    seen: list[str] = []
    monkeypatch.setattr(gru_route, "our_tilings", lambda x, a: ["ours:16,16"])
    real_tiling = gru_route.tiling

    def tiling(choice):
        seen.append(choice if choice and choice.startswith("ours:") else "ours")
        return real_tiling(choice)

    monkeypatch.setattr(gru_route, "tiling", tiling)
    real_cudnn = gru_route.cudnn_forward
    monkeypatch.setattr(gru_route, "cudnn_forward",
                        lambda *a: (seen.append("cudnn"), real_cudnn(*a))[1])
    plans = []
    real_plan = gru_seq._plan
    monkeypatch.setattr(gru_seq, "_plan", lambda *a: (plans.append(a[7]), real_plan(*a))[1])
    try:
        T, N, I, H = 3, 2, 4, 20
        rng = np.random.default_rng(3)
        vals = {k: rng.uniform(-0.5, 0.5, s) for k, s in dict(
            x=(T, N, I), R=(3 * H, H), W=(3 * H, I), b=(3 * H,), h0=(N, H),
            b2=(H,), ds=(T, N, H)).items()}
        g = mg.Graph()
        ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in vals.items()}
        d = mg.GRUDescriptor(training=True, resetGateFirst=True, resetAfter=True)
        opt = dict(inputWeight=ph["W"], bias=ph["b"], initState=ph["h0"],
                   secondaryBias=ph["b2"])
        st, z = g.GRU(ph["x"], ph["R"], descriptor=d, **opt)
        grads = g.GRUGradients(ph["x"], ph["R"], ph["ds"], z, st, descriptor=d, **opt)
        exe = g.compile({ph[k]: mg.ShapedType(list(v.shape), mg.float32)
                         for k, v in vals.items()}, [st, *grads], device="torch-cpu")
        plans.clear()
        out = exe.run([torch.tensor(vals[t.operation.name], dtype=torch.float32)
                       for t in exe.feedTensors])
        ev = [e for e in autotune.events() if e["key"].startswith("GRU:")]
        assert len(ev) == 1 and ev[0]["choice"] == "ours:16,16", ev
        assert set(ev[0]["times_ms"]) == {"ours", "cudnn", "ours:16,16"}
        # a second run (the choice cached): the forward and the backward kernels plan under
        # the chosen tiling, nothing else
        plans.clear()
        again = exe.run([torch.tensor(vals[t.operation.name], dtype=torch.float32)
                         for t in exe.feedTensors])
        assert len(plans) >= 2 and set(plans) == {(16, 16)}, plans
        for a_, b_ in zip(out, again):
            np.testing.assert_array_equal(a_.numpy(), b_.numpy())
        want = gru_ref(vals["x"], vals["R"][None], vals["W"], vals["b"], vals["h0"], None,
                       vals["b2"], reverse=False, bidirectional=False, reset_gate_first=True,
                       reset_after=True, flip_z=False, activations=(3, 3, 2))[0]
        np.testing.assert_allclose(out[0].numpy(), want, rtol=1e-5, atol=1e-5)
        gw = gru_grad_ref(vals["x"], vals["R"][None], vals["ds"], vals["W"], vals["b"],
                          vals["h0"], None, b2=vals["b2"], reverse=False, bidirectional=False,
                          reset_gate_first=True, reset_after=True, flip_z=False,
                          activations=(3, 3, 2))
        for o, n in zip(out[1:], GRADS):
            np.testing.assert_allclose(o.numpy().reshape(np.shape(gw[n])), gw[n], rtol=1e-4,
                                       atol=1e-5, err_msg=n)
    finally:
        autotune.set_timer(None)
        autotune.clear()
