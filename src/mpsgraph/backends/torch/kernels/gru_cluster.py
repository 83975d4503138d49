"""GRU and single-gate RNN recurrence on a thread-block cluster (Hopper+): the small-batch
float32 latency path, the LSTM's design (kernels/lstm_cluster.py, whose NVRTC / driver
machinery, cluster size and limits this module shares).

The persistent Triton kernels (gru_seq.py) synchronise their grid through a counter in global
memory at every step (twice per step for the GRU without resetAfter); measured on the H200 at
(T=50, N=8, H=128) float32 a GRU training step took 0.447 ms there against 0.163 ms for the
LSTM's cluster kernel (benchmarks/RESULTS.md). Here one direction is ONE cluster of CL = 8
CTAs on 8 SMs (the kernels compile for 8, 4, 2 or 1 CTAs: `config`; 8 measured the fastest):

- each CTA owns U = H / CL hidden units (all G gates of them: G = 3 for the GRU, 1 for the
  single gate) and keeps its part of R in registers for all T steps: forward, the G*U gate
  rows of R over all H inputs; backward, the same rows over all H units;
- forward: a step's h (times the next step's mask) is PUSHED by its producing CTA into the
  shared memory of every CTA (`st.async`, completing bytes on the receiver's mbarrier); the
  GRU without resetAfter pushes twice per step: hm * r after phase A (z, r), which every CTA
  needs for phase B's product hr R_o^T, then h. Backward: each CTA multiplies its own dA
  columns ([da_z, da_r, dq] with resetAfter, [da_z, da_r] without, da for the single gate) by
  R's rows for all H units and pushes every owner the partial dh of the owner's units, which
  the owner sums over the cluster; without resetAfter a first exchange per step does the same
  for u = da_o @ R_o (phase B: da_r = u hm f_r'(r), carry += u r m[t]);
- the products are exact float32 FMAs (`seg_product` of cluster_common.cuh), the outputs are
  stored after the step's pushes, the read-only inputs loaded two steps ahead.

Equations, options and buffers are exactly those of gru_seq.forward_sequence /
backward_sequence (module docstring there): every option (gate order, an activation per gate,
resetAfter with or without secondaryBias, flipZ, a state-shaped or per-step mask, reverse,
bidirectional (one cluster per direction), optional h0 / dh_final). Those functions call this
path first when no particular tiling is asked for (gru_seq.TILING unset, no
MPSGRAPH_GRU_TILING, sync None); it applies on a CUDA device of compute capability >= 9.0 with
NVRTC and the driver loadable, every tensor float32 (float32 and TF32 requests alike: the
product here is exact float32), N <= 16, H a multiple of 32 in [32, 256], and
MPSGRAPH_GRU_CLUSTER not 0; it declines (returns False after one RuntimeWarning per
configuration) where NVRTC or the driver refuses to compile, load or launch the kernels, and
the Triton kernels run.

The CUDA source is cluster_common.cuh + gru_cluster.cu (beside this file), compiled at first
use by NVRTC with the shape and options as #defines (cached per process). Triton's interpreter
cannot run it: its numerics are tested on the GPU (tests/backends/test_gru_cluster.py, `gpu`,
against the float64 oracle, every option), its host side and its compile for sm_90 on the CPU
(the same file; the compile where an NVRTC library is installed).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from . import lstm_cluster as lc
from . import pow2

CL, MAX_N = lc.CL, lc.MAX_N


@dataclass(frozen=True)
class Config(lc._Shape):
    """Compile-time shape of the two kernels: G gates, `two` (the GRU without resetAfter:
    a second exchange per step); per thread CJ columns x KP k's of the product, Q = K / KP
    lanes per column group (forward K = H, M = G*U; backward K = G*U, M = H; the derived
    sizes: lstm_cluster._Shape)."""
    H: int
    N: int
    G: int
    two: bool
    cj_f: int
    kp_f: int
    cj_b: int
    kp_b: int
    cl: int = CL  # CTAs per cluster

    @property
    def smem_f(self) -> int:  # hsm (and hrs) [2][NP][ROW_F], pre [NP][G*U], xo [NP][U]
        row = self.q_f * (self.kp_f + lc._pad(self.kp_f))
        return 4 * pow2(self.N) * ((4 if self.two else 2) * row + (self.G + 1) * self.U)

    @property
    def smem_b(self) -> int:  # recv [2][CL][NP][U], xo [NP][ROW_B], part [NP][H] (+ recv2, xb)
        row = self.q_b * (self.kp_b + lc._pad(self.kp_b))
        per = 2 * self.cl * self.U + row
        return 4 * pow2(self.N) * ((2 if self.two else 1) * per + self.H)


def config(N: int, H: int, gates: int, reset_after: bool, cl: int | None = None) -> Config | None:
    """The kernels' shape for batch N, hidden H, the cell and `cl` CTAs per cluster, or None
    outside this path's range (N <= 16, H a multiple of 32 in [32, 256], H / cl a multiple of
    4, the product shapes and shared memory fitting). `cl` None: MPSGRAPH_GRU_CLUSTER_SIZE,
    else the largest size that fits (8 from H = 32: measured the fastest wherever it fits,
    as for the LSTM). MPSGRAPH_GRU_CLUSTER_CFG="CJF,KPF,CJB,KPB" forces the product shapes
    (measuring)."""
    if gates not in (1, 3) or not (1 <= N <= MAX_N and H % 32 == 0 and 32 <= H <= 256):
        return None
    if cl is None:
        cl = lc.requested_size("MPSGRAPH_GRU_CLUSTER_SIZE")
    if cl is not None:
        return _config(N, H, gates, reset_after, cl)
    return next((c for c in (_config(N, H, gates, reset_after, s) for s in lc.SIZES)
                 if c is not None), None)


def sizes(N: int, H: int, gates: int, reset_after: bool) -> list[int]:
    """The cluster sizes (lstm_cluster.SIZES order) whose kernels fit the call."""
    return [c for c in lc.SIZES if _config(N, H, gates, reset_after, c) is not None]


def _config(N: int, H: int, gates: int, reset_after: bool, cl: int) -> Config | None:
    if cl not in lc.SIZES or H % cl or (H // cl) % 4:
        return None
    two = gates == 3 and not reset_after
    U = H // cl
    forced = lc.forced_shapes("MPSGRAPH_GRU_CLUSTER_CFG")
    if forced:
        cj_f, kp_f, cj_b, kp_b = forced
        for cj, kp, K, M in ((cj_f, kp_f, H, gates * U), (cj_b, kp_b, gates * U, H)):
            q = K // kp if kp > 0 else 0
            if (cj <= 0 or kp <= 0 or M % cj or K % kp or kp % 4 or q > 32 or 32 % q
                    or (q * M // cj) % 32 or q * M // cj > 1024):
                raise ValueError(f"MPSGRAPH_GRU_CLUSTER_CFG="
                                 f"{os.environ['MPSGRAPH_GRU_CLUSTER_CFG'].strip()!r} does not "
                                 f"fit H={H}, {gates} gate(s), cluster size {cl}")
    else:
        # thread targets: the LSTM's measured optimum at CL (~2H forward, ~H backward), grown
        # by CL / cl for a smaller cluster (each CTA has that much more work; lstm_cluster.py
        # `_config`)
        lim = () if cl == CL else lc.SMALL_CLUSTER
        f = lc.product_shape(H, gates * U, N, min(1024, 2 * H * CL // cl), *lim)
        b = lc.product_shape(gates * U, H, N, min(1024, H * CL // cl), *lim)
        if f is None or b is None:
            return None
        (cj_f, kp_f), (cj_b, kp_b) = f, b
    cfg = Config(H, N, gates, two, cj_f, kp_f, cj_b, kp_b, cl)
    if max(cfg.smem_f, cfg.smem_b) > lc.MAX_SMEM:
        return None
    return cfg


def enabled() -> bool:
    """MPSGRAPH_GRU_CLUSTER: unset / 1 use this path where it applies, 0 never."""
    v = os.environ.get("MPSGRAPH_GRU_CLUSTER", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError(f"MPSGRAPH_GRU_CLUSTER={v!r}: expected 0 or 1")
    return v != "0"


def source() -> str:
    """The CUDA source: cluster_common.cuh + gru_cluster.cu (beside this file)."""
    return lc.common_source() + Path(__file__).with_name("gru_cluster.cu").read_text()


def defines(cfg: Config, *, blocks, activations, reset_after: bool, flip_z: bool,
            reverse: bool, bidirectional: bool, flags: dict[str, bool]) -> dict[str, int]:
    """The #defines of one compile: shape (`cfg`), gate blocks, activations, options."""
    d = dict(HID=cfg.H, NB=cfg.N, NP=pow2(cfg.N), CL=cfg.cl, U=cfg.U, G=cfg.G, CJ_F=cfg.cj_f,
             KP_F=cfg.kp_f, Q_F=cfg.q_f, NT_F=cfg.nt_f, PAD_F=lc._pad(cfg.kp_f),
             CJ_B=cfg.cj_b, KP_B=cfg.kp_b, Q_B=cfg.q_b, NT_B=cfg.nt_b, PAD_B=lc._pad(cfg.kp_b))
    bz, br = (int(b) for b in blocks)
    acts = tuple(int(a) for a in activations) + (0, 0)
    d |= dict(BZ=bz, BR=br, AZ=acts[0], AR=acts[1], AO=acts[2],
              RA=int(cfg.G == 3 and bool(reset_after)), TWO=int(cfg.two),
              FLIPZ=int(cfg.G == 3 and bool(flip_z)),
              REV=int(bool(reverse) and not bidirectional), BIDIR=int(bool(bidirectional)))
    for k in ("HAS_H0", "HAS_MASK", "HAS_B2", "HAS_DHF"):
        d[k] = int(bool(flags.get(k, False)))
    return d


@functools.lru_cache(maxsize=64)
def _kernels(key: tuple, arch: str, device_index: int):
    cfg, defs = key[0], dict(key[1])
    nvrtc, cuda = lc._libs()
    with torch.cuda.device(device_index):
        cubin, _ = lc.compile_source(defs, arch, nvrtc, text=source(), name="gru_cluster.cu")
        return (lc._Kernel(cuda, cubin, "gru_cluster_fwd", cfg.nt_f, cfg.smem_f, cfg.cl),
                lc._Kernel(cuda, cubin, "gru_cluster_bwd", cfg.nt_b, cfg.smem_b, cfg.cl))


def usable(device: torch.device, N: int, H: int, gates: int, reset_after: bool,
           tensors) -> Config | None:
    """The Config when this path applies to a call (module docstring), else None."""
    if device.type != "cuda" or not enabled():
        return None
    cfg = config(N, H, gates, reset_after)
    if cfg is None or any(t is not None and t.dtype != torch.float32 for t in tensors):
        return None
    index = torch.cuda.current_device() if device.index is None else device.index
    if lc._arch(index) is None or lc._libs() is None:
        return None
    return cfg


def _compiled(cfg: Config, device: torch.device, **kw):
    return lc.load_cached(_kernels, cfg, device, defines(cfg, **kw), "gru_cluster")


def forward(cfg: Config, xp, R, h0, mask, b2, state, zstate, *, blocks, activations,
            reset_after: bool, flip_z: bool, reverse: bool, bidirectional: bool) -> bool:
    """gru_seq.forward_sequence on the cluster path (the caller checked `usable`; unit last
    strides; mask [T, N, D*H] with stride 0 on T allowed). False (nothing written) when the
    kernels cannot be compiled, loaded or launched here."""
    T, D = xp.shape[0], 2 if bidirectional else 1
    b2 = b2.reshape(-1) if (b2 is not None and reset_after) else None
    flags = dict(HAS_H0=h0 is not None, HAS_MASK=mask is not None, HAS_B2=b2 is not None)
    kernels = _compiled(cfg, xp.device, blocks=blocks, activations=activations,
                        reset_after=reset_after, flip_z=flip_z, reverse=reverse,
                        bidirectional=bidirectional, flags=flags)
    if kernels is None:
        return False
    dm = state
    st = lambda a, i: 0 if a is None else a.stride(i)  # noqa: E731
    return lc.launch_or_warn(kernels[0], D, [
        xp, R, dm if h0 is None else h0, dm if mask is None else mask, dm if b2 is None else b2,
        zstate, state, T, xp.stride(0), xp.stride(1), R.stride(0), R.stride(1), R.stride(2),
        st(h0, 0), st(mask, 0), st(mask, 1), zstate.stride(0), zstate.stride(1),
        state.stride(0), state.stride(1)])


def backward(cfg: Config, dstate, zstate, out_fwd, R, h0, mask, q, dh_final, dA, dq, dh0, *,
             blocks, activations, reset_after: bool, flip_z: bool, reverse: bool,
             bidirectional: bool) -> bool:
    """gru_seq.backward_sequence on the cluster path (as `forward`, also in its answer)."""
    T, D = zstate.shape[0], 2 if bidirectional else 1
    flags = dict(HAS_H0=h0 is not None, HAS_MASK=mask is not None,
                 HAS_DHF=dh_final is not None)
    kernels = _compiled(cfg, dA.device, blocks=blocks, activations=activations,
                        reset_after=reset_after, flip_z=flip_z, reverse=reverse,
                        bidirectional=bidirectional, flags=flags)
    if kernels is None:
        return False
    dm = dh0
    hf = zstate if out_fwd is None else out_fwd
    q = q if (reset_after and cfg.G == 3) else None
    dq = dq if q is not None else None
    st = lambda a, i: 0 if a is None else a.stride(i)  # noqa: E731
    return lc.launch_or_warn(kernels[1], D, [
        dstate, zstate, hf, R, dm if h0 is None else h0, dm if mask is None else mask,
        dm if q is None else q, dm if dh_final is None else dh_final, dA,
        dm if dq is None else dq, dh0, T, dstate.stride(0), dstate.stride(1), zstate.stride(0),
        zstate.stride(1), hf.stride(0), hf.stride(1), R.stride(0), R.stride(1), R.stride(2),
        st(h0, 0), st(mask, 0), st(mask, 1), st(q, 0), st(q, 1), st(dh_final, 0),
        dA.stride(0), dA.stride(1), st(dq, 0), st(dq, 1), dh0.stride(0)])

