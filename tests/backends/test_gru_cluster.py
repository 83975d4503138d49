"""The GRU / single-gate RNN cluster path (kernels/gru_cluster.py + gru_cluster.cu). On the
CPU: which calls it takes and their thread shapes, and, where an NVRTC library is installed,
that the CUDA source compiles for sm_90 with every option (no warnings; no register spills at
the benchmark's shapes). On a Hopper GPU (`gpu`): every option of test_gru_triton.py's cases,
at sizes the path takes, against the float64 oracles of tests/oracles/gru_f64.py (outputs
poisoned with NaN first), with the path's calls counted."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from backends.test_gru_triton import CASES, _check, _run, poison  # noqa: E402, F401 (poison: the fixture)
from mpsgraph.backends.torch.kernels import gru_cluster as gc  # noqa: E402
from mpsgraph.backends.torch.kernels import gru_seq, lstm_cluster  # noqa: E402

CUDA = torch.cuda.is_available()
CLUSTER = CUDA and torch.cuda.get_device_capability()[0] >= 9


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for k in ("MPSGRAPH_GRU_CLUSTER", "MPSGRAPH_GRU_CLUSTER_CFG", "MPSGRAPH_GRU_CLUSTER_SIZE",
              "MPSGRAPH_GRU_TILING", "MPSGRAPH_GRU_KERNEL", "MPSGRAPH_NO_TRITON"):
        monkeypatch.delenv(k, raising=False)


def test_config_range():
    c = gc.config(8, 128, 3, True)  # (T=50, N=8, H=128): the benchmark's GRU
    assert (c.U, c.G, c.two, c.cj_f, c.kp_f, c.nt_f, c.cj_b, c.kp_b, c.nt_b) == (
        16, 3, False, 4, 8, 192, 4, 12, 128)
    assert gc.config(8, 128, 3, False).two
    c = gc.config(8, 128, 1, False)  # single gate: 16 columns per CTA
    assert (c.nt_f, c.q_f, c.nt_b, c.q_b) == (256, 32, 128, 4)
    for N, H, G in itertools.product((1, 3, 8, 16), (64, 96, 128, 192, 256), (1, 3)):
        c = gc.config(N, H, G, True)
        assert c is not None, (N, H, G)
        for q, nt, kp in ((c.q_f, c.nt_f, c.kp_f), (c.q_b, c.nt_b, c.kp_b)):
            assert 32 % q == 0 and nt % 32 == 0 and nt <= 1024 and kp % 4 == 0
        assert c.q_f * c.kp_f == H and c.q_b * c.kp_b == G * H // 8
        assert c.smem_f <= 200 * 1024 and c.smem_b <= 200 * 1024
    for N, H, G in ((17, 128, 3), (0, 128, 3), (8, 80, 3), (8, 16, 1), (8, 288, 3),
                    (8, 128, 4), (8, 128, 2)):
        assert gc.config(N, H, G, True) is None, (N, H, G)
    # smaller clusters (lstm_cluster.SIZES): each CTA owns H / cl units
    assert gc.sizes(8, 128, 3, True) == [8, 4, 2] and gc.sizes(8, 32, 1, False) == [8, 4, 2, 1]
    assert gc.sizes(8, 256, 3, False) == [8]
    for N, H, G, ra in itertools.product((1, 5, 16), (32, 64, 96, 128, 256), (1, 3),
                                         (False, True)):
        for cl in gc.sizes(N, H, G, ra):
            c = gc.config(N, H, G, ra, cl)
            assert (c.cl, c.U * cl) == (cl, H)
            assert c.q_f * c.kp_f == H and c.q_b * c.kp_b == G * c.U
            assert max(c.smem_f, c.smem_b) <= lstm_cluster.MAX_SMEM
            if cl < lstm_cluster.CL:
                assert max(c.nt_f, c.nt_b) <= lstm_cluster.SMALL_CLUSTER[0]
    assert gc.config(8, 128, 3, True, 3) is None


def test_cluster_size_requests(monkeypatch):
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_SIZE", "4")
    assert gc.config(8, 128, 3, True).cl == 4 and gc.config(8, 128, 3, True, 2).cl == 2
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_SIZE", "16")
    with pytest.raises(ValueError, match="MPSGRAPH_GRU_CLUSTER_SIZE"):
        gc.config(8, 128, 3, True)


def test_config_env(monkeypatch):
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_CFG", "2,8,2,12")
    c = gc.config(8, 128, 3, True)
    assert (c.cj_f, c.kp_f, c.cj_b, c.kp_b) == (2, 8, 2, 12)
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_CFG", "4,8,4,16")  # 48 dA columns % 16
    with pytest.raises(ValueError, match="does not fit"):
        gc.config(8, 128, 3, True)
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_CFG", "x")
    with pytest.raises(ValueError, match="CJF,KPF,CJB,KPB"):
        gc.config(8, 128, 3, True)
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER", "yes")
    with pytest.raises(ValueError, match="MPSGRAPH_GRU_CLUSTER"):
        gc.enabled()


def test_not_taken_on_cpu_or_with_a_tiling(monkeypatch):
    x = torch.zeros(1)
    R = torch.zeros((1, 3 * 128, 128))
    cpu = torch.device("cpu")
    assert gc.usable(cpu, 8, 128, 3, True, (x,)) is None
    assert gru_seq.cluster_config(cpu, 8, 128, 1, R, 3, True, None, ()) is None
    cuda = torch.device("cuda")
    assert gru_seq.cluster_config(cuda, 8, 128, 1, R, 3, True, True, ()) is None  # sync given
    tok = gru_seq.TILING.set((16, 16))
    try:
        assert gru_seq.cluster_config(cuda, 8, 128, 1, R, 3, True, None, ()) is None
    finally:
        gru_seq.TILING.reset(tok)
    monkeypatch.setenv("MPSGRAPH_GRU_TILING", "16,16")
    assert gru_seq.cluster_config(cuda, 8, 128, 1, R, 3, True, None, ()) is None


def _nvrtc():
    try:
        return lstm_cluster._nvrtc_lib()
    except OSError:
        pytest.skip("no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)")


ALL = dict(HAS_H0=1, HAS_MASK=1, HAS_B2=1, HAS_DHF=1)


@pytest.mark.parametrize("N,H,G,ra,flags,bidir,cl", [
    (8, 128, 3, True, {}, False, None), (8, 128, 3, True, ALL, True, None),
    (8, 128, 3, False, {}, False, None), (8, 128, 3, False, ALL, True, None),
    (8, 128, 1, False, {}, False, None), (8, 128, 1, False, ALL, True, None),
    (1, 256, 3, True, ALL, True, None), (1, 256, 3, False, {}, True, None),
    (16, 64, 1, False, ALL, False, None), (3, 64, 3, False, ALL, False, None),
    (16, 256, 3, True, ALL, False, None), (16, 256, 1, False, {}, True, None),
    (1, 64, 3, False, ALL, True, 1), (8, 128, 3, True, ALL, False, 4),
    (4, 128, 1, False, ALL, False, 2), (5, 32, 3, False, ALL, True, 2),
    (3, 96, 3, True, ALL, False, 4),
])
def test_compiles_for_sm90(N, H, G, ra, flags, bidir, cl):
    nvrtc = _nvrtc()
    cfg = gc.config(N, H, G, ra, cl)
    d = gc.defines(cfg, blocks=(1, 0) if G == 3 else (0, 1),
                   activations=(4, 3, 1) if G == 3 else (2,), reset_after=ra, flip_z=True,
                   reverse=True, bidirectional=bidir, flags=flags)
    cubin, log = lstm_cluster.compile_source(d, "sm_90", nvrtc, ptxas_verbose=True,
                                             text=gc.source(), name="gru_cluster.cu")
    assert cubin[:4] == b"\x7fELF"
    assert "warning" not in log.lower(), log
    assert len([ln for ln in log.splitlines() if "Used" in ln]) == 2, log
    if H <= 128 or N == 1:  # the benchmark's shapes: R and the sums stay in registers
        assert log.count(" 0 bytes spill stores") == 2, log


# ------------------------------------------------------------------------------------ GPU
SIZES = [(5, 3, 64), (4, 8, 128), (3, 16, 256), (6, 1, 96), (7, 5, 192)]
GPU_CASES = {name: replace(c, T=SIZES[i % len(SIZES)][0], N=SIZES[i % len(SIZES)][1],
                           H=SIZES[i % len(SIZES)][2])
             for i, (name, c) in enumerate(CASES.items())}


@pytest.fixture
def cluster_runs(monkeypatch):
    """Counts the cluster path's forward and backward calls (those that ran)."""
    seen = []
    for name in ("forward", "backward"):
        fn = getattr(gc, name)
        monkeypatch.setattr(gc, name, lambda *a, _fn=fn, _n=name, **k: (
            _fn(*a, **k) and (seen.append(_n) or True)))
    return seen


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.usefixtures("poison")
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_cluster_float32(name, cluster_runs):
    _check(*_run(GPU_CASES[name]), tol=2e-5)
    assert cluster_runs == ["forward", "backward"]


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.usefixtures("poison")
@pytest.mark.parametrize("name", ["default", "resetAfter_b2", "rnn_tanh"])
def test_cluster_off_and_other_thread_shapes(name, cluster_runs, monkeypatch):
    c = replace(CASES[name], T=5, N=8, H=128, dirs="bi", mask="seq")
    monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER", "0")  # the Triton kernels
    _check(*_run(c), tol=2e-5)
    assert cluster_runs == []
    monkeypatch.delenv("MPSGRAPH_GRU_CLUSTER")
    shapes = ("2,8,2,12", "1,16,4,24") if c.gates == 3 else ("1,8,2,8", "4,16,1,16")
    for cfg in shapes:
        monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_CFG", cfg)
        _check(*_run(c), tol=2e-5)
    assert cluster_runs == ["forward", "backward"] * 2


# every cluster size the kernels compile for (lstm_cluster.SIZES) on a few option sets, at
# shapes where several fit (H = 32 and 96 included)
SIZE_CASES = {"default": (5, 3, 64), "resetAfter_b2": (4, 8, 128), "rnn_tanh": (6, 1, 96),
              "bidirectional": (5, 7, 32), "mask_seq": (3, 16, 64)}


@pytest.mark.gpu
@pytest.mark.skipif(not CLUSTER, reason="needs a CUDA GPU of compute capability >= 9.0")
@pytest.mark.usefixtures("poison")
@pytest.mark.parametrize("name", list(SIZE_CASES))
def test_cluster_sizes(name, cluster_runs, monkeypatch):
    T, N, H = SIZE_CASES[name]
    c = replace(CASES[name], T=T, N=N, H=H)
    sizes = gc.sizes(N, H, c.gates, c.ra)
    assert len(sizes) >= 2, sizes
    for cl in sizes:
        monkeypatch.setenv("MPSGRAPH_GRU_CLUSTER_SIZE", str(cl))
        assert gc.config(N, H, c.gates, c.ra).cl == cl
        _check(*_run(c), tol=2e-5)
    assert cluster_runs == ["forward", "backward"] * len(sizes)
