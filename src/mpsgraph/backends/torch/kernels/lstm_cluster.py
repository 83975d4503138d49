"""LSTM recurrence on a thread-block cluster (Hopper+): the small-batch float32 latency path.

The persistent Triton kernels (lstm_seq_fwd.py / lstm_seq_bwd.py) synchronise a grid of
programs through a counter in global memory at every step: at (N=8, H=128) a step and pass
costs ~5 us in float32 (~2.8 in bf16), most of it the chain of L2 round trips (barrier, h
loads, R slices; LSTM_DESIGNS.md). Here one direction is ONE cluster of CL = 8 CTAs on 8 SMs
(4 where U = H / 8 would not fit the lane grouping, e.g. H = 32 or 96; the kernels compile for
8, 4, 2 or 1 CTAs, and 8 measured the fastest wherever it fits: `config`):

- each CTA owns U = H / CL hidden units (all four gates of them) and keeps its part of R in
  REGISTERS for all T steps (forward: the 4U gate rows of R over all H inputs; backward: the
  same 4U rows over all H units; 32 KB per CTA in float32 at H = 128);
- forward: a step's h is PUSHED by its producing CTA into the shared memory of every CTA of
  the cluster (distributed shared memory: `st.async` 16-byte stores, each completing its
  bytes on the receiver's mbarrier), and a CTA starts the next step's product as soon as its
  own mbarrier has counted all N x H values (no cluster-wide barrier in the step loop; the
  hardware cluster barrier runs once, after the setup). Backward: each CTA multiplies ITS OWN
  dA columns (local, right after its gate math) by R's rows for all H units and pushes every
  owner the partial dh of the owner's units (N x U values per CTA and owner, 4x less than
  the whole dA), which the owner sums over the 8 CTAs. The receiving buffers are double-
  buffered with one mbarrier each; no buffer is overwritten early: a CTA can only push into
  buffer (k+1) & 1 at step k after receiving every CTA's step k-1 output, which each sends
  after it has finished reading that buffer at step k-1;
- the product is exact float32 FMAs (not TF32 splits): each thread multiplies CJ columns by a
  KP-long K segment of the operand rows (16-byte shared loads, padded segments against bank
  conflicts), and the KP segments of a column group are summed across Q = K / KP adjacent lanes
  with a reduce-scatter of warp shuffles (`seg_product`); the gate math uses the fast
  exponential (`__expf`, what Triton's `tl.exp` compiles to);
- the outputs (state, cell, zState; dA; the backward's h[t_prev] * m[t], `hprev`) are stored
  after the step's pushes, and the read-only inputs (xp, mask; dstate, zState, cell, ...) are
  loaded two steps ahead of their use.

Measured on the H200 (training step device-only, (T=50, N=8, H=128) float32: 0.164 ms vs 0.52
for the Triton kernels and 0.267 for cuDNN in a CUDA graph; LSTM_DESIGNS.md, design 4).

Equations, options and buffers are exactly those of `forward_sequence` / `backward_sequence`
(every option: gate order, the five activations per gate, peephole and its gradient,
state-shaped or per-step mask, reverse, bidirectional (one cluster per direction), optional
h0 / c0 / dcell / dh_final / dc_final). Those functions call this path first when they are
asked for no particular tiling or launch mode; it applies to a CUDA device of compute
capability >= 9.0 with NVRTC and the driver loadable, every tensor float32 (float32 and TF32
requests: the product here is exact float32), N <= 16, H a multiple of 32 in [32, 256] that a
cluster size fits (`config`: every such H but 224), and MPSGRAPH_LSTM_CLUSTER not 0; it
declines (returns False, one RuntimeWarning per configuration) where NVRTC or the driver
refuses to compile, load or launch the kernels.

The CUDA source is lstm_cluster.cu (beside this file), compiled at first use by NVRTC for the
device's architecture with the shape and options as #defines (cached per process; the NVRTC
library is the one PyTorch's CUDA build ships). It is CUDA, not Triton, so Triton's interpreter
cannot run it: its numerics are tested on the GPU (tests/backends/test_triton_lstm_seq.py,
`test_cluster_*`, against float64, every option), its host side and its compile for sm_90 on
the CPU (tests/backends/test_lstm_cluster.py; the compile where an NVRTC library is installed).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from . import pow2

CL = 8  # CTAs per cluster: the default and the portable maximum
SIZES = (8, 4, 2, 1)  # the cluster sizes the kernels compile for
MAX_N = 16
MAX_SMEM = 227 * 1024  # dynamic shared memory per CTA (sm_90)
SMALL_CLUSTER = (512, 64)  # product_shape's (max_threads, reserve) below CL CTAs


def requested_size(env: str) -> int | None:
    """The cluster size the environment variable `env` asks for (measuring:
    benchmarks/cluster_sizes.py), else None."""
    v = os.environ.get(env, "").strip()
    if not v:
        return None
    if v not in {str(c) for c in SIZES}:
        raise ValueError(f"{env}={v!r}: expected one of {', '.join(map(str, SIZES))}")
    return int(v)


def product_shape(K: int, M: int, N: int, target: int, max_threads: int = 1024,
                  reserve: int = 32) -> tuple[int, int] | None:
    """(CJ, KP) of a per-step [N, K] x [K, M] product (`seg_product`): Q = K / KP a power of
    two <= 32, Q * M / CJ threads (a multiple of 32, <= `max_threads`) nearest `target`, then
    the most columns per thread (fewer shared loads per FMA), then the fewest lanes per group;
    the accumulators plus R (pow2(N) * CJ + KP * CJ) within the registers a thread has at
    that thread count (65536 / threads, less `reserve` for the rest of the kernel; at most
    96)."""
    best = None
    for cj in (4, 2, 1):
        if M % cj:
            continue
        for q in (1, 2, 4, 8, 16, 32):
            kp = K // q
            if K % q or kp % 4:
                continue
            nt = q * M // cj
            if nt % 32 or nt > max_threads or kp * cj > 128:
                continue
            if pow2(N) * cj + kp * cj > min(96, 65536 // nt - reserve):
                continue
            key = (abs(math.log2(nt / target)), -cj, q)
            if best is None or key < best[0]:
                best = (key, cj, kp)
    return None if best is None else best[1:]


class _Shape:
    """The derived sizes of a cluster kernel pair's Config (this module's and
    gru_cluster.py's): G gate blocks per unit, U units per CTA; forward [N, H] x [H, G*U] in
    Q_F = H / KP_F lanes per column group and NT_F threads; backward [N, G*U] x [G*U, H]
    (this CTA's dA columns by R's rows) in Q_B = G*U / KP_B lanes and NT_B threads."""

    @property
    def U(self) -> int:
        return self.H // self.cl

    @property
    def q_f(self) -> int:
        return self.H // self.kp_f

    @property
    def nt_f(self) -> int:
        return self.q_f * self.G * self.U // self.cj_f

    @property
    def q_b(self) -> int:
        return self.G * self.U // self.kp_b

    @property
    def nt_b(self) -> int:
        return self.q_b * self.H // self.cj_b


def forced_shapes(env: str) -> tuple[int, int, int, int] | None:
    """The product shapes "CJF,KPF,CJB,KPB" the environment variable `env` forces
    (measuring), else None."""
    v = os.environ.get(env, "").strip()
    if not v:
        return None
    try:
        cj_f, kp_f, cj_b, kp_b = (int(x) for x in v.split(","))
    except ValueError:
        raise ValueError(f"{env}={v!r}: expected CJF,KPF,CJB,KPB") from None
    return cj_f, kp_f, cj_b, kp_b


@dataclass(frozen=True)
class Config(_Shape):
    """Compile-time shape of the two kernels (module docstring; the derived sizes: `_Shape`):
    per thread CJ columns x KP k's of the product; Q = K / KP lanes per column group; NT
    threads per CTA."""
    H: int
    N: int
    cj_f: int
    kp_f: int
    cj_b: int
    kp_b: int
    cl: int = CL  # CTAs per cluster
    G: ClassVar[int] = 4  # the four gates

    @property
    def smem_f(self) -> int:  # bytes: hsm [2][NP][ROW_F], pre [NP][4U], xo [NP][U]
        np_ = pow2(self.N)
        return 4 * np_ * (2 * self.q_f * (self.kp_f + _pad(self.kp_f)) + 5 * self.U)

    @property
    def smem_b(self) -> int:  # recv [2][CL][NP][U], xo [NP][ROW_B], part [NP][H]
        np_ = pow2(self.N)
        return 4 * np_ * (2 * self.cl * self.U + self.q_b * (self.kp_b + _pad(self.kp_b))
                          + self.H)


def _pad(kp: int) -> int:
    """Padding (floats) after each KP-long segment of a gathered row: 4 (one 16-byte access)
    when a segment is longer than one access, so that the lanes of a warp reading different
    segments hit different banks."""
    return 4 if kp > 4 else 0


def config(N: int, H: int, cl: int | None = None) -> Config | None:
    """The kernels' shape for batch N, hidden H and `cl` CTAs per cluster, or None outside
    this path's range (N <= 16, H a multiple of 32 in [32, 256], H / cl a multiple of 4, the
    product shapes and shared memory fitting). `cl` None: MPSGRAPH_LSTM_CLUSTER_SIZE, else
    the largest size that fits: 8 where it does, measured the fastest wherever it fits
    (benchmarks/RESULTS.md, "Cluster sizes"); 4 at H = 32, 96, 160 (U = H / 8 has no
    lane grouping there). Forward: [N, H] x [H, 4U], Q_F = H / KP_F lanes per group,
    Q_F * 4U / CJ_F threads; backward: [N, 4U] x [4U, H], Q_B = 4U / KP_B, Q_B * H / CJ_B
    threads; R takes KP * CJ registers per thread. MPSGRAPH_LSTM_CLUSTER_CFG="CJF,KPF,CJB,KPB"
    forces the product shapes (measuring)."""
    if not (1 <= N <= MAX_N and H % 32 == 0 and 32 <= H <= 256):
        return None
    if cl is None:
        cl = requested_size("MPSGRAPH_LSTM_CLUSTER_SIZE")
    if cl is not None:
        return _config(N, H, cl)
    return next((c for c in (_config(N, H, s) for s in SIZES) if c is not None), None)


def sizes(N: int, H: int) -> list[int]:
    """The cluster sizes (SIZES order) whose kernels fit (N, H)."""
    return [c for c in SIZES if _config(N, H, c) is not None]


def _config(N: int, H: int, cl: int) -> Config | None:
    if cl not in SIZES or H % cl or (H // cl) % 4:
        return None
    U = H // cl
    forced = forced_shapes("MPSGRAPH_LSTM_CLUSTER_CFG")
    if forced:
        cj_f, kp_f, cj_b, kp_b = forced
    elif cl == CL:
        # measured (H200, (T=50, N=8, H=128), training step device-only, LSTM_DESIGNS.md):
        # forward 4 x 8 (256 threads) 66 us vs 70 for 4 x 16, 78 for 2 x 8; backward 4 x 16
        # (128 threads) 98 us vs 105 for 4 x 8 (256 threads)
        cj_f, kp_f = 4, max(8, H // 16)
        cj_b, kp_b = 4, max(4, H // 8)
        # accumulators (pow2(N) x CJ) plus R (KP x CJ) beyond ~96 registers spill at 512
        # threads (H = 256, N > 8): half the columns, twice the K segment, per thread
        if 4 * pow2(N) + 4 * kp_f > 96:
            cj_f, kp_f = 2, 2 * kp_f
        if 4 * pow2(N) + 4 * kp_b > 96:
            cj_b, kp_b = 2, 2 * kp_b
    else:
        # a smaller cluster: each CTA has CL / cl times the work of the measured shape's;
        # the thread targets (2H forward, H backward at CL) grow with it, up to the 512
        # threads at which the gate math's registers still fit beside the product's (the
        # sm_90 compiles of tests/backends/test_lstm_cluster.py)
        f = product_shape(H, 4 * U, N, 2 * H * CL // cl, *SMALL_CLUSTER)
        b = product_shape(4 * U, H, N, H * CL // cl, *SMALL_CLUSTER)
        if f is None or b is None:
            return None
        (cj_f, kp_f), (cj_b, kp_b) = f, b
    cfg = Config(H, N, cj_f, kp_f, cj_b, kp_b, cl)
    for cj, kp, K, M, nt in ((cj_f, kp_f, H, 4 * U, cfg.nt_f), (cj_b, kp_b, 4 * U, H, cfg.nt_b)):
        q = K // kp if kp > 0 else 0
        if (cj <= 0 or kp <= 0 or M % cj or K % kp or kp % 4 or q > 32 or 32 % q or nt % 32
                or nt > 1024 or kp * cj > 128):
            if forced:
                raise ValueError(f"MPSGRAPH_LSTM_CLUSTER_CFG="
                                 f"{os.environ['MPSGRAPH_LSTM_CLUSTER_CFG'].strip()!r} does "
                                 f"not fit H={H}, cluster size {cl}")
            return None
    if max(cfg.smem_f, cfg.smem_b) > MAX_SMEM:
        return None
    return cfg


def enabled() -> bool:
    """MPSGRAPH_LSTM_CLUSTER: unset / 1 use this path where it applies, 0 never (read at every
    call; for measuring)."""
    v = os.environ.get("MPSGRAPH_LSTM_CLUSTER", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError(f"MPSGRAPH_LSTM_CLUSTER={v!r}: expected 0 or 1")
    return v != "0"


# ----------------------------------------------------------------------------------------------
# NVRTC + driver API (ctypes)
# ----------------------------------------------------------------------------------------------


def _nvrtc_lib() -> ctypes.CDLL:
    names = []
    if torch.version.cuda:
        names.append(f"libnvrtc.so.{torch.version.cuda.split('.')[0]}")
    names.append("libnvrtc.so")
    for site in sys.path:  # the nvidia-*-nvrtc wheels beside torch
        names += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so*")))
    for name in names:
        if "alt" in os.path.basename(name) or "builtins" in os.path.basename(name):
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("NVRTC (libnvrtc) not found")


@functools.cache
def _libs() -> tuple[ctypes.CDLL, ctypes.CDLL] | None:
    try:
        return _nvrtc_lib(), ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def _check_cu(lib: ctypes.CDLL, res: int, what: str) -> None:
    if res != 0:
        msg = ctypes.c_char_p()
        lib.cuGetErrorString(res, ctypes.byref(msg))
        raise RuntimeError(f"lstm_cluster: {what} failed: CUDA error {res} "
                           f"({(msg.value or b'?').decode()})")


def common_source() -> str:
    """The device code the cluster kernels share (cluster_common.cuh beside this file)."""
    return Path(__file__).with_name("cluster_common.cuh").read_text()


def source() -> str:
    """The CUDA source: cluster_common.cuh + lstm_cluster.cu (beside this file)."""
    return common_source() + Path(__file__).with_name("lstm_cluster.cu").read_text()


def compile_source(defines: dict[str, int], arch: str, nvrtc: ctypes.CDLL | None = None,
                   ptxas_verbose: bool = False, text: str | None = None,
                   name: str = "lstm_cluster.cu") -> tuple[bytes, str]:
    """(CUBIN, log) of the CUDA source (`text`, default `source()`; `name` for NVRTC's
    messages) with `defines` for `arch` (e.g. "sm_90"). Runs without a GPU (the tests compile
    it on the CPU where an NVRTC library is installed)."""
    nvrtc = nvrtc or _nvrtc_lib()
    src = "".join(f"#define {k} {int(v)}\n" for k, v in defines.items())
    src += source() if text is None else text
    prog = ctypes.c_void_p()
    res = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0,
                                   None, None)
    if res != 0:
        raise RuntimeError(f"{name}: nvrtcCreateProgram failed ({res})")
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"-default-device"]
    if ptxas_verbose:
        opts.append(b"--ptxas-options=-v")
    arr = (ctypes.c_char_p * len(opts))(*opts)
    res = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    if res != 0:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        raise RuntimeError(f"{name}: NVRTC compile failed:\n{log}")
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin.raw, log


def defines(cfg: Config, *, blocks, activations, reverse: bool, bidirectional: bool,
            flags: dict[str, bool]) -> dict[str, int]:
    """The #defines of one compile: shape (`cfg`), gate blocks, activations, options."""
    d = dict(HID=cfg.H, NB=cfg.N, NP=pow2(cfg.N), CL=cfg.cl, U=cfg.U, CJ_F=cfg.cj_f,
             KP_F=cfg.kp_f,
             Q_F=cfg.q_f, NT_F=cfg.nt_f, PAD_F=_pad(cfg.kp_f), CJ_B=cfg.cj_b, KP_B=cfg.kp_b,
             Q_B=cfg.q_b, NT_B=cfg.nt_b, PAD_B=_pad(cfg.kp_b))
    d |= dict(zip(("BI", "BF", "BZ", "BO"), (int(b) for b in blocks)))
    d |= dict(zip(("AI", "AF", "AZ", "AO", "AG"), (int(a) for a in activations)))
    d |= dict(REV=bool(reverse) and not bidirectional, BIDIR=bool(bidirectional))
    for k in ("HAS_H0", "HAS_C0", "HAS_MASK", "PEEP", "DCS", "HAS_DHF", "HAS_DCF", "DP",
              "HPREV"):
        d[k] = int(bool(flags.get(k, False)))
    return d


class _Kernel:
    """A loaded kernel function (module kept alive) and its launch shape."""

    def __init__(self, lib, cubin: bytes, name: str, threads: int, smem: int, cl: int = CL):
        self.lib, self.threads, self.smem, self.cl = lib, threads, smem, cl
        self.module = ctypes.c_void_p()
        _check_cu(lib, lib.cuModuleLoadData(ctypes.byref(self.module), cubin), "cuModuleLoadData")
        self.func = ctypes.c_void_p()
        _check_cu(lib, lib.cuModuleGetFunction(ctypes.byref(self.func), self.module,
                                               name.encode()), "cuModuleGetFunction")
        if smem > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check_cu(lib, lib.cuFuncSetAttribute(self.func, 8, smem), "cuFuncSetAttribute")

    def __call__(self, directions: int, args: list) -> None:
        c_args = []
        for a in args:
            if isinstance(a, torch.Tensor):
                c_args.append(ctypes.c_void_p(a.data_ptr()))
            else:
                if not -(1 << 31) <= a < (1 << 31):
                    raise ValueError(f"lstm_cluster: stride/size {a} does not fit int32")
                c_args.append(ctypes.c_int(a))
        ptrs = (ctypes.c_void_p * len(c_args))(
            *[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in c_args])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        _check_cu(self.lib, self.lib.cuLaunchKernel(
            self.func, self.cl, directions, 1, self.threads, 1, 1, self.smem, stream, ptrs, None),
            "cuLaunchKernel")


@functools.lru_cache(maxsize=64)
def _kernels(key: tuple, arch: str, device_index: int) -> tuple[_Kernel, _Kernel]:
    cfg, defs = key[0], dict(key[1])
    libs = _libs()
    assert libs is not None
    nvrtc, cuda = libs
    with torch.cuda.device(device_index):
        cubin, _ = compile_source(defs, arch, nvrtc)
        return (_Kernel(cuda, cubin, "lstm_cluster_fwd", cfg.nt_f, cfg.smem_f, cfg.cl),
                _Kernel(cuda, cubin, "lstm_cluster_bwd", cfg.nt_b, cfg.smem_b, cfg.cl))


@functools.cache
def _arch(index: int) -> str | None:
    major, minor = torch.cuda.get_device_capability(index)
    return f"sm_{major}{minor}" if major >= 9 else None


def usable(device: torch.device, N: int, H: int, tensors) -> Config | None:
    """The Config when this path applies to a call (module docstring), else None."""
    if device.type != "cuda" or not enabled():
        return None
    cfg = config(N, H)
    if cfg is None or any(t is not None and t.dtype != torch.float32 for t in tensors):
        return None
    index = torch.cuda.current_device() if device.index is None else device.index
    if _arch(index) is None or _libs() is None:
        return None
    return cfg


_FAILED: dict[tuple, str] = {}  # compiles / loads that failed (not retried in this process)


def load_cached(kernels, cfg, device: torch.device, defs: dict[str, int], label: str):
    """`kernels(key, arch, index)` (an lru-cached compile + load: the (forward, backward)
    kernels for `defs` on `device`) at first use; None (after one RuntimeWarning per
    configuration) when NVRTC or the driver refuses them (e.g. an NVRTC or driver too old for
    st.async): the callers then run the Triton kernels."""
    index = torch.cuda.current_device() if device.index is None else device.index
    key = ((cfg, tuple(sorted(defs.items()))), _arch(index), index)
    if (label, key) in _FAILED:
        return None
    try:
        return kernels(*key)
    except (RuntimeError, OSError) as e:
        _FAILED[(label, key)] = str(e)
        warnings.warn(f"{label}: {e}; the Triton kernels run instead", RuntimeWarning,
                      stacklevel=4)
        return None


def _get(cfg: Config, device: torch.device, defs: dict[str, int]):
    """The LSTM's (forward, backward) kernels for `defs` on `device` (`load_cached`)."""
    return load_cached(_kernels, cfg, device, defs, "lstm_cluster")


def _compiled(cfg: Config, device: torch.device, flags: dict[str, bool], *, reverse: bool,
              bidirectional: bool, blocks, activations):
    """`_get` for a call's options (the compile-time flags plus direction, gates, activations)."""
    return _get(cfg, device, defines(cfg, blocks=blocks, activations=activations,
                                     reverse=reverse, bidirectional=bidirectional, flags=flags))


def launch_or_warn(kernel: _Kernel, directions: int, args: list) -> bool:
    """Launch one cluster per direction; False after a RuntimeWarning when the driver refuses
    the launch (the callers then run the Triton kernels)."""
    try:
        kernel(directions, args)
        return True
    except RuntimeError as e:  # a launch the driver refuses (e.g. no room for a cluster)
        warnings.warn(f"{e}; the Triton kernels run instead", RuntimeWarning, stacklevel=3)
        return False


def forward(cfg: Config, xp, R, h0, c0, mask, peephole, state, cell, zstate, *, reverse: bool,
            bidirectional: bool, blocks, activations) -> bool:
    """`forward_sequence` on the cluster path (the caller checked `usable`; mask already
    [T, N, D*H] (stride 0 on T allowed), peephole float32 [D, 4H], unit last strides).
    False (nothing written) when the kernels cannot be compiled, loaded or launched here."""
    T, D = xp.shape[0], 2 if bidirectional else 1
    flags = dict(HAS_H0=h0 is not None, HAS_C0=c0 is not None, HAS_MASK=mask is not None,
                 PEEP=peephole is not None)
    kernels = _compiled(cfg, xp.device, flags, reverse=reverse, bidirectional=bidirectional,
                        blocks=blocks, activations=activations)
    if kernels is None:
        return False
    dm = state
    st = lambda a, i: 0 if a is None else a.stride(i)  # noqa: E731
    return launch_or_warn(kernels[0], D, [
        xp, R, dm if h0 is None else h0, dm if c0 is None else c0,
        dm if mask is None else mask, dm if peephole is None else peephole, zstate, cell, state,
        T, xp.stride(0), xp.stride(1), R.stride(0), R.stride(1), R.stride(2), st(h0, 0),
        st(c0, 0), st(mask, 0), st(mask, 1), zstate.stride(0), zstate.stride(1),
        cell.stride(0), cell.stride(1), state.stride(0), state.stride(1)])


def backward(cfg: Config, dstate, zstate, cell, R, c0, mask, peephole, dcell, dh_final,
             dc_final, dA, dh0, dc0, dpeep, hprev, *, reverse: bool, bidirectional: bool,
             blocks, activations) -> bool:
    """`backward_sequence` on the cluster path (as `forward`, also in its answer). The
    peephole gradient: per-row partials [N, D*4H] from the kernel, summed here over the rows
    in a fixed order; hprev (optional, [T, N, D*H] float32): h[t_prev] * m[t] of every step but
    the first of each direction, written by the kernel (it has o and c of every step)."""
    T, N, D, H = zstate.shape[0], zstate.shape[1], 2 if bidirectional else 1, cfg.H
    dpp = None if dpeep is None else torch.empty((N, D * 4 * H), dtype=torch.float32,
                                                 device=dA.device)
    flags = dict(HAS_C0=c0 is not None, HAS_MASK=mask is not None, PEEP=peephole is not None,
                 DCS=dcell is not None, HAS_DHF=dh_final is not None,
                 HAS_DCF=dc_final is not None, DP=dpp is not None, HPREV=hprev is not None)
    kernels = _compiled(cfg, dA.device, flags, reverse=reverse, bidirectional=bidirectional,
                        blocks=blocks, activations=activations)
    if kernels is None:
        return False
    dm = dc0
    st = lambda a, i: 0 if a is None else a.stride(i)  # noqa: E731
    ran = launch_or_warn(kernels[1], D, [
        dstate, zstate, cell, R, dm if c0 is None else c0, dm if mask is None else mask,
        dm if peephole is None else peephole, dm if dcell is None else dcell,
        dm if dh_final is None else dh_final, dm if dc_final is None else dc_final, dA, dh0,
        dc0, dm if dpp is None else dpp, dm if hprev is None else hprev, T, dstate.stride(0),
        dstate.stride(1), zstate.stride(0), zstate.stride(1), cell.stride(0), cell.stride(1),
        R.stride(0), R.stride(1), R.stride(2), st(c0, 0), st(mask, 0), st(mask, 1),
        st(dcell, 0), st(dcell, 1), st(dh_final, 0), st(dc_final, 0), dA.stride(0),
        dA.stride(1), dh0.stride(0), dc0.stride(0), 0 if dpp is None else dpp.stride(0),
        st(hprev, 0), st(hprev, 1)])
    if ran and dpeep is not None:
        torch.sum(dpp, dim=0, out=dpeep.view(D * 4 * H))
    return ran
