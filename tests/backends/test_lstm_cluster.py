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
    for N, H in ((17, 128), (0, 128), (8, 96), (8, 32), (8, 288), (8, 100)):
        assert lc.config(N, H) is None, (N, H)


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


@pytest.mark.parametrize("N,H,flags,bidir", [(8, 128, {}, False), (8, 128, ALL, True),
                                             (16, 128, ALL, False), (3, 64, ALL, True),
                                             (16, 256, {}, False), (8, 256, ALL, False)])
def test_compiles_for_sm90(N, H, flags, bidir, monkeypatch):
    monkeypatch.delenv("MPSGRAPH_LSTM_CLUSTER_CFG", raising=False)
    nvrtc = _nvrtc()
    cfg = lc.config(N, H)
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
