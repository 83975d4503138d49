"""The cluster LSTM path's host side (kernels/lstm_cluster.py) on the CPU: which shapes it
takes and their thread shapes, and, where an NVRTC library is installed, that the CUDA source
compiles for sm_90 with every option, without register spills at the benchmark's shapes.
Its numerics are tested on the GPU (test_triton_lstm_seq.py, `test_cluster_*`)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
from mpsgraph.backends.torch.kernels import lstm_cluster as lc  # noqa: E402


def test_config_range(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_CFG", raising=False)
    assert lc.config(8, 128) == lc.Config(128, 8, 4, 8, 4, 16)
    c = lc.config(8, 128)
    assert (c.U, c.q_f, c.nt_f, c.q_b, c.nt_b) == (16, 16, 256, 4, 128)
    c = lc.config(16, 256)  # 2 columns x 32 k's per thread (4 x 16 spills there)
    assert (c.cj_f, c.kp_f, c.nt_f, c.cj_b, c.kp_b, c.nt_b) == (2, 32, 512, 2, 64, 256)
    assert lc.config(8, 256) == lc.Config(256, 8, 4, 16, 2, 64)
    assert lc.config(1, 64) is not None
    for N, H in ((17, 128), (0, 128), (8, 288), (8, 100), (8, 16)):
        assert lc.config(N, H) is None, (N, H)
    # the default size: the largest that fits (8 CTAs from H = 64; U = 12 at H = 96 has no
    # lane grouping, so 4 CTAs there; H = 32 at 8 CTAs has too few threads)
    assert lc.config(8, 96).cl == 4 and lc.config(8, 32).cl == 4
    assert lc.sizes(8, 128) == [8, 4] and lc.sizes(8, 32) == [4, 2, 1]
    assert lc.sizes(8, 64) == [8, 4, 2, 1]
    assert lc.sizes(8, 256) == [8]  # R of fewer CTAs does not fit their registers
    for N, H in ((1, 32), (4, 64), (8, 128), (16, 64), (3, 96), (16, 192), (2, 256)):
        for cl in lc.sizes(N, H):
            c = lc.config(N, H, cl)
            assert (c.cl, c.U * cl) == (cl, H)
            for q, nt, kp, K in ((c.q_f, c.nt_f, c.kp_f, H), (c.q_b, c.nt_b, c.kp_b, 4 * c.U)):
                assert 32 % q == 0 and nt % 32 == 0 and nt <= 1024 and kp % 4 == 0
                assert q * kp == K
            assert max(c.smem_f, c.smem_b) <= lc.MAX_SMEM
            if cl < lc.CL:
                assert max(c.nt_f, c.nt_b) <= lc.SMALL_CLUSTER[0]
    assert lc.config(8, 128, 3) is None and lc.config(8, 128, 16) is None


def test_cluster_size_requests(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_CFG", raising=False)
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_SIZE", "2")
    assert lc.config(8, 64).cl == 2 and lc.config(8, 64, 4).cl == 4
    assert lc.config(8, 128) is None  # a size that does not fit: not the path
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_SIZE", "3")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_CLUSTER_SIZE='3'"):
        lc.config(8, 128)
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_SIZE")
    assert lc.config(8, 64).cl == lc.CL


def test_config_env(monkeypatch):
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_CFG", "2,8,2,16")
    assert lc.config(8, 128) == lc.Config(128, 8, 2, 8, 2, 16)
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_CFG", "3,8,2,16")  # 64 columns % 3
    with pytest.raises(ValueError, match="does not fit"):
        lc.config(8, 128)
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER_CFG", "a,b")
    with pytest.raises(ValueError, match="CJF,KPF,CJB,KPB"):
        lc.config(8, 128)
    monkeypatch.setenv("MPSGRAPH_LSTM_CLUSTER", "2")
    with pytest.raises(ValueError, match="MPSGRAPH_LSTM_CLUSTER"):
        lc.enabled()


def test_not_usable_on_cpu():
    import torch

    x = torch.zeros(1)
    assert lc.usable(torch.device("cpu"), 8, 128, (x,)) is None


def _nvrtc():
    try:
        return lc._nvrtc_lib()
    except OSError:
        pytest.skip("no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)")


ALL = dict(HAS_H0=1, HAS_C0=1, HAS_MASK=1, PEEP=1, DCS=1, HAS_DHF=1, HAS_DCF=1, DP=1, HPREV=1)


@pytest.mark.parametrize("N,H,flags,bidir,cl", [
    (8, 128, {}, False, None), (8, 128, ALL, True, None), (16, 128, ALL, False, None),
    (3, 64, ALL, True, None), (16, 256, {}, False, None), (8, 256, ALL, False, None),
    (1, 64, ALL, False, 1), (4, 64, ALL, True, 2), (8, 128, ALL, False, 4),
    (16, 64, {}, True, 2), (7, 32, ALL, True, None), (1, 32, {}, False, 1),
    (2, 96, ALL, False, None)])
def test_compiles_for_sm90(N, H, flags, bidir, cl, monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_CFG", raising=False)
    nvrtc = _nvrtc()
    cfg = lc.config(N, H, cl)
    d = lc.defines(cfg, blocks=(0, 2, 1, 3), activations=(4, 3, 1, 2, 0), reverse=True,
                   bidirectional=bidir, flags=flags)
    cubin, log = lc.compile_source(d, "sm_90", nvrtc, ptxas_verbose=True)
    assert cubin[:4] == b"\x7fELF"
    assert "warning" not in log.lower(), log
    used = [ln for ln in log.splitlines() if "Used" in ln]
    assert len(used) == 2, log  # the two kernels
    if H <= 128:  # the benchmark's shapes: R and the sums stay in registers (H = 256 at 512
        # threads, capped at 128 registers, spills ~100-250 bytes in the backward)
        assert log.count(" 0 bytes spill stores") == 2, log


def _call_args(T=3, N=8, H=128):
    import torch

    z = torch.zeros
    return (z(T, N, 4 * H), z(1, 4 * H, H), z(T, N, H), z(T, N, 4 * H), z(N, H))


KW = dict(reverse=False, bidirectional=False, blocks=(0, 1, 2, 3), activations=(3, 3, 2, 3, 2))


def test_compile_failure_falls_back(monkeypatch):
    # NVRTC or the driver refusing the kernels: one RuntimeWarning per configuration, the
    # answer False (the wrappers then run the Triton kernels), no second compile
    import warnings

    import torch

    calls = []

    def refuse(*a):
        calls.append(a)
        raise RuntimeError("lstm_cluster: NVRTC compile failed: no st.async here")

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(lc, "_arch", lambda i: "sm_90")
    monkeypatch.setattr(lc, "_kernels", refuse)
    monkeypatch.setattr(lc, "_FAILED", {})
    cfg = lc.config(8, 128)
    xp, R, s, z, n = _call_args()
    with pytest.warns(RuntimeWarning, match="no st.async here; the Triton kernels run"):
        assert lc.forward(cfg, xp, R, None, None, None, None, s, s, z, **KW) is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lc.forward(cfg, xp, R, None, None, None, None, s, s, z, **KW) is False
        # the backward of the same options shares that compile (one module, two kernels)
        assert lc.backward(cfg, s, z, s, R, None, None, None, None, None, None, z, n, n, None,
                           None, **KW) is False
    assert len(calls) == 1
    with pytest.warns(RuntimeWarning, match="no st.async"):  # other options: another compile
        assert lc.backward(cfg, s, z, s, R, n, None, None, None, None, None, z, n, n, None,
                           None, **KW) is False
    assert len(calls) == 2


def test_refused_launch_falls_back(monkeypatch):
    import torch

    class Refused:
        def __call__(self, directions, args):
            raise RuntimeError("lstm_cluster: cuLaunchKernel failed: CUDA error 1")

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(lc, "_arch", lambda i: "sm_90")
    monkeypatch.setattr(lc, "_kernels", lambda *a: (Refused(), Refused()))
    cfg = lc.config(8, 128)
    xp, R, s, z, n = _call_args()
    with pytest.warns(RuntimeWarning, match="cuLaunchKernel failed"):
        assert lc.forward(cfg, xp, R, None, None, None, None, s, s, z, **KW) is False
    dp = torch.full((1, 4 * 128), 7.0)
    with pytest.warns(RuntimeWarning, match="cuLaunchKernel failed"):
        assert lc.backward(cfg, s, z, s, R, None, None, None, None, None, None, z, n, n, dp,
                           None, **KW) is False
    assert (dp == 7.0).all()  # nothing written


def _params(kernel: str) -> list[str]:
    """The parameter names of a kernel's signature in lstm_cluster.cu."""
    import re

    src = lc.source()
    body = src[src.index(kernel + "("):]
    return re.findall(r"(\w+)\s*(?:,|\))", body[:body.index("{")])


def test_launch_arguments_match_the_kernels(monkeypatch):
    # what forward / backward pass, in number and kind, is what the CUDA signatures take
    import torch

    seen = {}

    class Record:
        def __init__(self, name):
            self.name = name

        def __call__(self, directions, args):
            seen[self.name] = (directions, args)

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(lc, "_arch", lambda i: "sm_90")
    monkeypatch.setattr(lc, "_kernels", lambda *a: (Record("fwd"), Record("bwd")))
    cfg = lc.config(8, 128)
    xp, R, s, z, n = _call_args()
    assert lc.forward(cfg, xp, R, n, n, s, None, s, s, z, **KW) is True
    hp = torch.zeros_like(s)
    assert lc.backward(cfg, s, z, s, R, n, s, None, s, n, n, z, n, n, None, hp, **KW) is True
    for name, kernel in (("fwd", "lstm_cluster_fwd"), ("bwd", "lstm_cluster_bwd")):
        params = _params(kernel)
        directions, args = seen[name]
        assert directions == 1 and len(args) == len(params), (name, len(args), params)
        first_int = params.index("T")
        assert all(isinstance(a, torch.Tensor) for a in args[:first_int]), name
        assert all(isinstance(a, int) for a in args[first_int:]), name
    assert _params("lstm_cluster_fwd")[-1] == "s_hn" and _params("lstm_cluster_bwd")[-1] == "s_hpn"

