"""torch kernels of the convolution family, through `torch.convolution` and
`torch.ops.aten.convolution_backward` (cuDNN on CUDA, oneDNN / native kernels on the CPU), except
depthwise convolutions, which run Triton kernels where Triton runs.

Every operand is first taken to canonical strides in the user's layout (`canonical`: a copy
only when a stride, a size-1 axis's included, differs from a fresh tensor's; PyTorch's CPU
convolutions miscompute tensors whose size-1 axes carry odd strides). Layouts are then handled
as views, never copies: NHWC data `x` is viewed as NCHW with
`x.permute(0, 3, 1, 2)` (for a contiguous NHWC tensor that IS a channels_last NCHW tensor, which
both cuDNN and oneDNN take natively), and HWIO weights as OIHW with `w.permute(3, 2, 0, 1)`.
Results come back in the user's layout (the channels_last result permuted back is contiguous
NHWC). Symmetric padding is the convolution's own `padding`; the asymmetric remainder is a zero
pad of the source (forward, weights gradient) or, for the data gradient, the gradient of a
larger virtual source that is then sliced. float16/bFloat16 run natively on CUDA (cuDNN
accumulates in float32) and in float32 on the CPU, rounded once.

Depthwise convolutions (groups == C, O = C * M) run Triton kernels instead
(kernels/depthwise_conv.py, kernels/depthwise_conv_wgrad.py) - all three ops for NCHW data, the
data gradient for NHWC (measured on the H200: cuDNN's NHWC depthwise forward and weights
gradient are faster than ours, its NHWC data gradient and everything NCHW far slower) - whenever
`depthwise_conv.supported(...)` holds: float16 / bfloat16 / float32, kH * kW <= 64, and Triton
runs on the device (CUDA; the CPU only under TRITON_INTERPRET=1, for tests). Why: the work is
memory-bound and cuDNN is far from one pass over the data there (H200, N=32, C=128, 56x56, 3x3,
float32: 127 / 227 / 203 us for forward / data gradient / weights gradient in NCHW, 42 / 45 /
39 us in NHWC, where reading x and writing y once takes about 25 us). The kernels read the NCHW
or channels_last views in place (any padding, no F.pad copy), accumulate in float32 and write
straight into a result of the user's layout and dtype (the weights gradient through a small
float32 [splits, O, kH*kW] buffer of partial sums, summed by torch).

On CUDA the path of a call is chosen by measurement at its key's first call (autotune.py):
the Triton depthwise kernels (where they run, NHWC forward and weights gradient included),
cuDNN in the data layout's memory format, or cuDNN in the other one (NHWC computed as
contiguous NCHW, NCHW as channels_last, the copies counted). The rules above (`_paths`' hand
choice) are the fallback. For NHWC data with HWIO weights and one group (float32 only where
TF32 is allowed) the implicit-GEMM Triton kernels of kernels/conv_igemm.py, which read the HWIO
weights as they are: "igemm" (forward, stride-1 data gradient, weights gradient). Two more
candidates where they apply: "gemm", a 1x1 convolution of NHWC data as one cuBLAS matrix
product with the weights as they are (`_pointwise`; the hand rule's at stride 1), and
"scale", a 1x1 depthwise convolution as the per-channel scale it is (one Triton pass where
Triton runs; `_channel_scale`; the hand rule's).

NHWC data with HWIO weights is the one case that copies: cuDNN has no HWIO filter layout, so
the weights are transposed into its (O, kH, kW, I) order (and the weights gradient back into
HWIO). Those transposes are torch's strided copy on the "cudnn" path; on CUDA the tuner also
times "cudnn_tt", the same cuDNN call with the transposes done by the tiled Triton kernel of
kernels/transpose.py (torch's copy of a [kH*kW*I, O] matrix into [O, kH*kW*I] reaches a
fraction of the memory bandwidth: ~17 us for 512x512x3x3 bfloat16 weights on the H200).
MPSGRAPH_TRITON_TRANSPOSE=1 makes every such transpose the Triton one (the hand rule too), =0
takes the candidate away.
"""

from __future__ import annotations

import dataclasses
import math
import os

import torch
import torch.nn.functional as F

from ...ops.convolution import Conv2DAttrs
from ...types import TensorNamedDataLayout as L
from . import autotune, canonical, kernel
from .kernels import available as _triton_available

_conv_backward = torch.ops.aten.convolution_backward.default  # the resolved overload


def _nchw(x: torch.Tensor, layout: L) -> torch.Tensor:
    return x.permute(0, 3, 1, 2) if layout == L.NHWC else x


def _user_data(y: torch.Tensor, layout: L, dtype: torch.dtype) -> torch.Tensor:
    """NCHW result -> the user's layout and dtype, contiguous (one copy at most)."""
    y = y.permute(0, 2, 3, 1) if layout == L.NHWC else y
    if y.dtype != dtype:
        y = y.to(dtype)
    return y if y.is_contiguous() else y.contiguous()


def _transpose_knob() -> str:
    """MPSGRAPH_TRITON_TRANSPOSE: "1" (always the Triton transpose), "0" (never), "" (tuned)."""
    return os.environ.get("MPSGRAPH_TRITON_TRANSPOSE", "").strip()


def _triton_transpose(t: torch.Tensor, path: str):
    """kernels/transpose.py for the weight transposes of `path` ("cudnn_tt", or any path under
    MPSGRAPH_TRITON_TRANSPOSE=1) where it can run on `t`, else None (torch's strided copy)."""
    if ((path != "cudnn_tt" and _transpose_knob() != "1") or not t.is_contiguous()
            or t.dtype not in _DEPTHWISE_DTYPES or not _triton_available(t.device)):
        return None
    from .kernels import transpose

    return transpose


def _oihw(w: torch.Tensor, layout: L, fmt: torch.memory_format, path: str = "cudnn"
          ) -> torch.Tensor:
    """Weights as OIHW in the memory format of the data: cuDNN runs an NHWC convolution only
    when the weights are channels_last too (O, kH, kW, I in memory); otherwise it converts the
    activations. HWIO weights of NHWC data are the one case that needs a copy (a transpose of
    the [kH*kW*I, O] matrix they are in memory)."""
    if layout == L.HWIO and fmt == torch.channels_last:
        tr = _triton_transpose(w, path)
        if tr is not None:
            kh, kw, i, o = w.shape
            return tr.transpose_2d(w.reshape(kh * kw * i, o)).view(o, kh, kw, i).permute(
                0, 3, 1, 2)
    wc = w.permute(3, 2, 0, 1) if layout == L.HWIO else w
    # exact strides (`contiguous(memory_format=)` keeps odd strides of size-1 axes, which the
    # CPU convolution then misreads: HWIO [1, 8, 1, 1] weights of NHWC data)
    return canonical(wc, fmt)


def _user_weights(w: torch.Tensor, layout: L, dtype: torch.dtype, path: str = "cudnn"
                  ) -> torch.Tensor:
    if layout == L.HWIO and w.dtype == dtype:
        ohwi = w.permute(0, 2, 3, 1)  # channels_last OIHW (NHWC data): a contiguous view
        tr = _triton_transpose(ohwi, path)
        if tr is not None:
            o, kh, kw, i = ohwi.shape
            return tr.transpose_2d(ohwi.reshape(o, kh * kw * i)).view(kh, kw, i, o)
    w = w.permute(2, 3, 1, 0) if layout == L.HWIO else w
    if w.dtype != dtype:
        w = w.to(dtype)
    return w if w.is_contiguous() else w.contiguous()


def _canon_shape(shape, layout: L) -> list[int]:
    """A user-layout shape as NCHW / OIHW."""
    s = list(shape)
    if layout == L.NHWC:
        return [s[0], s[3], s[1], s[2]]
    if layout == L.HWIO:
        return [s[3], s[2], s[0], s[1]]
    return s


def _work(t: torch.Tensor) -> torch.Tensor:
    """Half types compute in float32 on the CPU; CUDA runs them natively."""
    if t.dtype in (torch.float16, torch.bfloat16) and t.device.type == "cpu":
        return t.float()
    return t


def _split_pads(a: Conv2DAttrs):
    """(symmetric padding (y, x), extra (top, bottom, left, right) beyond it)."""
    pt, pb, pl, pr = a.pads
    my, mx = min(pt, pb), min(pl, pr)
    return (my, mx), (pt - my, pb - my, pl - mx, pr - mx)


def _empty_result(shape, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros(tuple(shape), dtype=like.dtype, device=like.device)


def _degenerate(a: torch.Tensor, b: torch.Tensor, out_shape) -> bool:
    return a.numel() == 0 or b.numel() == 0 or 0 in out_shape


def _memory_format(a: Conv2DAttrs, *nchw_shapes) -> torch.memory_format:
    """The memory format the convolution runs in: channels_last for NHWC data, unless a 4-D
    operand (source, gradient or result, as NCHW shapes) has one channel or one pixel. Such a
    tensor is both contiguous and channels_last, and PyTorch's CPU convolution miscomputes
    some of them (NHWC x [3, 7, 8, 1] with HWIO w [1, 8, 1, 1]: errors of 1e8): they run as
    plain NCHW / OIHW, the operands copied to exactly those strides."""
    if a.data_layout != L.NHWC or any(s[1] == 1 or s[2] * s[3] == 1 for s in nchw_shapes):
        return torch.contiguous_format
    return torch.channels_last


def _oihw_view(w: torch.Tensor, layout: L) -> torch.Tensor:
    return w.permute(3, 2, 0, 1) if layout == L.HWIO else w


_DEPTHWISE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _depthwise(groups: int, c_in: int, w_oihw_shape, dtype: torch.dtype, device: torch.device):
    """(forward + data gradient module, weights gradient module) of the Triton depthwise
    kernels when they run this convolution, else None (the torch path). The cheap checks come
    first: the kernel modules are imported (and their kernels defined) only when needed."""
    c_out, _, kh, kw = w_oihw_shape
    if groups != c_in or c_out % c_in or dtype not in _DEPTHWISE_DTYPES:
        return None
    if not _triton_available(device):
        return None
    from .kernels import depthwise_conv, depthwise_conv_wgrad

    if not depthwise_conv.supported(groups, c_in, c_out, (kh, kw), dtype, device):
        return None
    return depthwise_conv, depthwise_conv_wgrad


def _igemm_kernels():
    from .kernels import conv_igemm

    return conv_igemm


def _pointwise(a: Conv2DAttrs, w_oihw_shape, t: torch.Tensor) -> bool:
    """A 1x1 convolution of NHWC data (one group, no padding, any stride): a matrix product of
    the [N*H'*W', C] data (the strided pixels: a copy where the stride is not 1) with the
    weights, which both MPSGraph weight layouts hold as a plain (transposed or not) [C, O] /
    [O, C] matrix - so cuBLAS runs it with no weight copy, where cuDNN would first copy HWIO
    weights into its own (O, kH, kW, I) order: the "gemm" path. Half types on the CPU keep the
    convolution path (computed in float32 and rounded once)."""
    return (a.data_layout == L.NHWC and tuple(w_oihw_shape[2:]) == (1, 1) and a.groups == 1
            and not any(a.pads)
            and (t.device.type != "cpu" or t.dtype in (torch.float32, torch.float64)))


def _channel_scale(a: Conv2DAttrs, c_in: int, w_oihw_shape) -> bool:
    """A 1x1 depthwise convolution with one output per channel, stride 1 and no padding: a
    per-channel scale, y = x * w[c] (one elementwise pass, the least memory traffic there is;
    the forward and the data gradient): the "scale" path."""
    c_out, _, kh, kw = w_oihw_shape
    return ((kh, kw) == (1, 1) and a.groups == c_in == c_out and a.stride == (1, 1)
            and not any(a.pads))


def _weight_matrix(w: torch.Tensor, layout: L) -> torch.Tensor:
    """1x1 weights as a [C, O] matrix (a view: HWIO [1,1,C,O] is one, OIHW [O,C,1,1] its
    transpose)."""
    return w.reshape(w.shape[2], w.shape[3]) if layout == L.HWIO else \
        w.reshape(w.shape[0], w.shape[1]).t()


def _rows(t: torch.Tensor, a: Conv2DAttrs) -> torch.Tensor:
    """NHWC data at the pixels a 1x1 convolution of stride a.stride reads, as [N*H'*W', C]."""
    if tuple(a.stride) != (1, 1):
        t = t[:, ::a.stride[0], ::a.stride[1], :]
    return t.reshape(-1, t.shape[3])


def _scaled(t: torch.Tensor, w: torch.Tensor, layout: L) -> torch.Tensor:
    """t * w[c] over the channel axis of `layout` (the "scale" path): one Triton pass
    (kernels/depthwise_conv.channel_scale) where Triton runs, else torch's multiply."""
    v = w.reshape(-1)
    if (t.dtype in _DEPTHWISE_DTYPES and t.is_contiguous() and v.is_contiguous()
            and _triton_available(t.device)):
        from .kernels import depthwise_conv

        return depthwise_conv.channel_scale(t, v, layout == L.NHWC)
    return (t * (v if layout == L.NHWC else v.view(-1, 1, 1))).contiguous()


def _igemm(op: str, a: Conv2DAttrs, t: torch.Tensor, w_numel: int) -> bool:
    """Whether the implicit-GEMM Triton kernels (kernels/conv_igemm.py: the HWIO weights read
    as they are) are a candidate: NHWC data with HWIO weights, one group, float16 / bfloat16 or
    TF32-allowed float32, the data gradient at stride 1, Triton on the device."""
    if (a.data_layout != L.NHWC or a.weights_layout != L.HWIO or a.groups != 1
            or (op == "data_grad" and tuple(a.stride) != (1, 1)) or w_numel >= 2**31 - 1
            or t.dtype not in _DEPTHWISE_DTYPES or not _triton_available(t.device)):
        return False
    return t.dtype != torch.float32 or bool(torch.backends.cudnn.allow_tf32)


def _paths(op: str, a: Conv2DAttrs, tdw, t: torch.Tensor, gemm: bool = False,
           scale: bool = False, igemm: bool = False) -> tuple[list[str], str]:
    """(candidate paths, the hand rule's path) of a 2-D convolution op: "triton" (the depthwise
    kernels, where they run), "cudnn" (the layout's own memory format) and, on CUDA,
    "cudnn_alt" (the other memory format: NHWC data computed as contiguous NCHW, NCHW data as
    channels_last; the layout conversion copies are part of its time) and, for NHWC data with
    HWIO weights, "cudnn_tt" (cuDNN with the Triton weight transpose: module docstring);
    "igemm" (`_igemm`), "gemm" (`_pointwise`; the hand rule's at
    stride 1) and "scale" (`_channel_scale`; the hand rule's where it applies) where they
    apply."""
    paths = ["cudnn"]
    if t.device.type == "cuda":
        paths.append("cudnn_alt")
        if (a.data_layout == L.NHWC and a.weights_layout == L.HWIO and _transpose_knob() == ""
                and t.dtype in _DEPTHWISE_DTYPES and _triton_available(t.device)):
            paths.append("cudnn_tt")
    if tdw is not None:
        paths.append("triton")
    hand = "triton" if tdw is not None and (op == "data_grad"
                                            or a.data_layout != L.NHWC) else "cudnn"
    if igemm:
        paths.append("igemm")
    if gemm:
        paths.append("gemm")
        if tuple(a.stride) == (1, 1):
            hand = "gemm"
    if scale:
        paths.append("scale")
        hand = "scale"
    return paths, hand


def _pick(op: str, a: Conv2DAttrs, shapes, t: torch.Tensor, paths, hand, run) -> str:
    """The path of this call: the autotuner's (autotune.py; `run(path)` computes the result on
    a path) where it is on and there is a choice, else the hand rule's."""
    if len(paths) <= 1 or not autotune.enabled(t.device):
        return hand
    tf32 = t.dtype == torch.float32 and bool(torch.backends.cudnn.allow_tf32)
    fast = ("conv2d", op, tuple(tuple(s) for s in shapes), t.dtype, t.device, a.stride,
            a.dilation, tuple(a.pads), a.groups, a.data_layout, a.weights_layout, tf32)

    def key():
        return autotune.key_string(
            "conv2d." + op, [list(s) for s in shapes], t.dtype,
            dict(stride=list(a.stride), dilation=list(a.dilation), pads=list(a.pads),
                 groups=a.groups, data=getattr(a.data_layout, "name", str(a.data_layout)),
                 weights=getattr(a.weights_layout, "name", str(a.weights_layout))),
            "tf32" if tf32 else "ieee")

    return autotune.choose(key, lambda: {p: (lambda p=p: run(p)) for p in paths}, hand,
                           t.device, fast_key=fast)


def _fmt(path: str, fmt: torch.memory_format) -> torch.memory_format:
    if path != "cudnn_alt":
        return fmt
    return torch.contiguous_format if fmt == torch.channels_last else torch.channels_last


@kernel("convolution2D")
def convolution2D(x: torch.Tensor, w: torch.Tensor, a: Conv2DAttrs) -> torch.Tensor:
    if _degenerate(x, w, out_shape=a.out_shape):
        return _empty_result(a.out_shape, x)
    x, w = canonical(x), canonical(w)
    wshape = _canon_shape(w.shape, a.weights_layout)  # (shapes, not permuted views: cheaper)
    c_in = _canon_shape(x.shape, a.data_layout)[1]
    tdw = _depthwise(a.groups, c_in, wshape, x.dtype, x.device)
    paths, hand = _paths("forward", a, tdw, x, _pointwise(a, wshape, x),  # (hand rule: cuDNN
                         _channel_scale(a, c_in, wshape),  # for NHWC, measured faster)
                         _igemm("forward", a, x, w.numel()))
    path = _pick("forward", a, (x.shape, w.shape), x, paths, hand,
                 lambda p: _forward_on(p, x, w, a, tdw))
    return _forward_on(path, x, w, a, tdw)


def _forward_on(path: str, x, w, a: Conv2DAttrs, tdw):
    if path == "igemm":
        return _igemm_kernels().forward(x, w, a.out_shape[1:3], a.stride, a.dilation, a.pads)
    if path == "gemm":
        return torch.mm(_rows(x, a), _weight_matrix(w, a.weights_layout)).view(a.out_shape)
    if path == "scale":
        return _scaled(x, w, a.data_layout)
    if path == "triton":
        y = torch.empty(a.out_shape, dtype=x.dtype, device=x.device)
        tdw[0].forward(_nchw(x, a.data_layout), _oihw_view(w, a.weights_layout), a.stride,
                       a.dilation, a.pads, out=_nchw(y, a.data_layout))
        return y
    xn = _nchw(x, a.data_layout)
    fmt = _fmt(path, _memory_format(a, xn.shape, _canon_shape(a.out_shape, a.data_layout)))
    xc, wc = canonical(_work(xn), fmt), _work(_oihw(w, a.weights_layout, fmt, path))
    pad, (et, eb, el, er) = _split_pads(a)
    if et or eb or el or er:
        xc = F.pad(xc, (el, er, et, eb))
    y = torch.convolution(xc, wc, None, a.stride, pad, a.dilation, False,
                          [0, 0], a.groups)
    return _user_data(y, a.data_layout, x.dtype)


@kernel("convolution2DDataGradient")
def convolution2DDataGradient(dy: torch.Tensor, w: torch.Tensor,
                              shape_tensor: torch.Tensor | None, a: Conv2DAttrs) -> torch.Tensor:
    if _degenerate(dy, w, out_shape=a.out_shape):
        return _empty_result(a.out_shape, dy)
    dy, w = canonical(dy), canonical(w)
    n, c, h, wd = _canon_shape(a.out_shape, a.data_layout)
    wshape = _canon_shape(w.shape, a.weights_layout)
    tdw = _depthwise(a.groups, c, wshape, dy.dtype, dy.device)
    paths, hand = _paths("data_grad", a, tdw, dy, _pointwise(a, wshape, dy),
                         _channel_scale(a, c, wshape), _igemm("data_grad", a, dy, w.numel()))
    path = _pick("data_grad", a, (dy.shape, w.shape, a.out_shape), dy, paths, hand,
                 lambda p: _data_grad_on(p, dy, w, a, tdw))
    return _data_grad_on(path, dy, w, a, tdw)


def _data_grad_on(path: str, dy, w, a: Conv2DAttrs, tdw):
    n, c, h, wd = _canon_shape(a.out_shape, a.data_layout)
    if path == "igemm":
        return _igemm_kernels().data_gradient(dy, w, a.out_shape, a.dilation, a.pads)
    if path == "gemm":
        g = torch.mm(dy.reshape(-1, dy.shape[3]), _weight_matrix(w, a.weights_layout).t())
        if tuple(a.stride) == (1, 1):
            return g.view(a.out_shape)
        dx = torch.zeros(a.out_shape, dtype=g.dtype, device=g.device)
        dx[:, ::a.stride[0], ::a.stride[1], :] = g.view(dy.shape[0], dy.shape[1],
                                                         dy.shape[2], c)
        return dx
    if path == "scale":
        return _scaled(dy, w, a.data_layout)
    if path == "triton":
        dx = torch.empty(a.out_shape, dtype=dy.dtype, device=dy.device)
        tdw[0].data_gradient(_nchw(dy, a.data_layout), _oihw_view(w, a.weights_layout),
                             (n, c, h, wd), a.stride, a.dilation, a.pads,
                             out=_nchw(dx, a.data_layout))
        return dx
    dyn = _nchw(dy, a.data_layout)
    fmt = _fmt(path, _memory_format(a, dyn.shape, (n, c, h, wd)))
    dyc, wc = canonical(_work(dyn), fmt), _work(_oihw(w, a.weights_layout, fmt, path))
    pad, (et, eb, el, er) = _split_pads(a)
    # a virtual source, as large as the asymmetric padding makes it; only its shape and memory
    # format are read
    src = torch.empty((n, c, h + et + eb, wd + el + er), dtype=dyc.dtype, device=dyc.device,
                      memory_format=fmt)
    dx = _conv_backward(dyc, src, wc, None, list(a.stride), list(pad),
                                    list(a.dilation), False, [0, 0], a.groups,
                                    [True, False, False])[0]
    if et or eb or el or er:
        dx = dx[:, :, et:et + h, el:el + wd]
    return _user_data(dx, a.data_layout, dy.dtype)


@kernel("convolution2DWeightsGradient")
def convolution2DWeightsGradient(dy: torch.Tensor, x: torch.Tensor,
                                 shape_tensor: torch.Tensor | None, a: Conv2DAttrs
                                 ) -> torch.Tensor:
    if _degenerate(dy, x, out_shape=a.out_shape):
        return _empty_result(a.out_shape, dy)
    dy, x = canonical(dy), canonical(x)
    wshape = _canon_shape(a.out_shape, a.weights_layout)
    tdw = _depthwise(a.groups, _canon_shape(x.shape, a.data_layout)[1], wshape, dy.dtype,
                     dy.device)
    paths, hand = _paths("weights_grad", a, tdw, dy,  # (hand rule: cuDNN for NHWC)
                         _pointwise(a, wshape, dy),
                         igemm=_igemm("weights_grad", a, dy, math.prod(a.out_shape)))
    path = _pick("weights_grad", a, (dy.shape, x.shape, a.out_shape), dy, paths, hand,
                 lambda p: _weights_grad_on(p, dy, x, a, tdw))
    return _weights_grad_on(path, dy, x, a, tdw)


def _weights_grad_on(path: str, dy, x, a: Conv2DAttrs, tdw):
    wshape = _canon_shape(a.out_shape, a.weights_layout)
    if path == "igemm":
        return _igemm_kernels().weights_gradient(dy, x, a.out_shape[:2], a.stride, a.dilation,
                                                 a.pads)
    if path == "gemm":
        xm, dym = _rows(x, a), dy.reshape(-1, dy.shape[3])
        if a.weights_layout == L.HWIO:  # [C, O]
            return torch.mm(xm.t(), dym).view(a.out_shape)
        return torch.mm(dym.t(), xm).view(a.out_shape)  # OIHW: [O, C]
    if path == "triton":
        g = torch.empty(a.out_shape, dtype=dy.dtype, device=dy.device)
        tdw[1].weights_gradient(_nchw(dy, a.data_layout), _nchw(x, a.data_layout),
                                wshape[2:], a.stride, a.dilation, a.pads,
                                out=_oihw_view(g, a.weights_layout))
        return g
    dyn, xn = _nchw(dy, a.data_layout), _nchw(x, a.data_layout)
    fmt = _fmt(path, _memory_format(a, dyn.shape, xn.shape))
    dyc, xc = canonical(_work(dyn), fmt), canonical(_work(xn), fmt)
    pad, (et, eb, el, er) = _split_pads(a)
    if et or eb or el or er:
        xc = F.pad(xc, (el, er, et, eb))
    wc = torch.empty(wshape, dtype=dyc.dtype, device=dyc.device,  # only its shape is read
                     memory_format=fmt)
    dw = _conv_backward(dyc, xc, wc, None, list(a.stride), list(pad),
                                    list(a.dilation), False, [0, 0], a.groups,
                                    [False, True, False])[1]
    return _user_weights(dw, a.weights_layout, dy.dtype, path)


# ---------------------------------------------------------------------------- issue 18
# The transposed 2-D ops are the 2-D ops with their roles renamed (ops/conv_extra.py).
@kernel("convolutionTranspose2D")
def convolutionTranspose2D(x, w, shape_tensor, a: Conv2DAttrs):
    return convolution2DDataGradient(x, w, shape_tensor, a)


@kernel("convolutionTranspose2DDataGradient")
def convolutionTranspose2DDataGradient(dy, w, shape_tensor, a: Conv2DAttrs):
    return convolution2D(dy, w, a)


@kernel("convolutionTranspose2DWeightsGradient")
def convolutionTranspose2DWeightsGradient(dy, x, shape_tensor, a: Conv2DAttrs):
    return convolution2DWeightsGradient(x, dy, shape_tensor, a)


# N-D convolutions (3-D, depthwise 2-D / 3-D) in the canonical form of ops/conv_extra.py
# (data [B, C, *S], weights [O, Cg, *K], g groups): torch.convolution and
# aten.convolution_backward (cuDNN on CUDA; groups == C is its depthwise path). Operands are
# brought to canonical form by a permutation and a reshape and made contiguous (exact strides:
# see `canonical`); symmetric padding is the convolution's own, the asymmetric remainder a
# zero pad of the source (forward, weights gradient) or a larger virtual source that the data
# gradient is sliced from.
from ...ops.conv_extra import (  # noqa: E402
    ConvNDAttrs,
    as_depthwise_2d,
    from_canonical_array,
    to_canonical_array,
)


def _nd_split(a: ConvNDAttrs):
    sym = [min(pb, pe) for pb, pe in a.pads]
    extra = [(pb - s, pe - s) for (pb, pe), s in zip(a.pads, sym)]
    return sym, extra


def _nd_pad_arg(extra):
    out = []
    for pb, pe in reversed(extra):  # F.pad: last axis first
        out += [pb, pe]
    return out


def _nd_format(a: ConvNDAttrs, *cshapes) -> torch.memory_format:
    """channels_last_3d for channels-last 3-D data (NDHWC, or a depthwise 3-D source with the
    channel axis last): the permuted user tensor is then already in cuDNN's NDHWC layout. As
    in 2-D (`_memory_format`), operands with one channel or one voxel run contiguous."""
    if len(a.stride) != 3 or a.data_perm != (0, 4, 1, 2, 3) or any(
            s[1] == 1 or s[2] * s[3] * s[4] == 1 for s in cshapes):
        return torch.contiguous_format
    return torch.channels_last_3d


def _cl3d_strides(shape) -> tuple[int, ...]:
    n, c, d, h, w = (max(v, 1) for v in shape)
    return (d * h * w * c, 1, h * w * c, w * c, c)


def _nd_in(t, perm, cshape, fmt=torch.contiguous_format):
    """An operand in canonical form with exact strides of `fmt` (a copy only when needed)."""
    t = to_canonical_array(canonical(t), perm, cshape)
    if fmt == torch.channels_last_3d:
        if t.stride() != _cl3d_strides(t.shape):
            t = t.clone(memory_format=fmt)
        return _work(t)
    return _work(canonical(t.contiguous()))


def _nd_out(yc, perm, out_shape, dtype):
    y = from_canonical_array(yc, perm, out_shape)
    if y.dtype != dtype:
        y = y.to(dtype)
    return y.contiguous()


def _nd_degenerate(a: ConvNDAttrs, *ts) -> bool:
    return (0 in a.out_shape or any(t.numel() == 0 for t in ts) or 0 in a.x_c or 0 in a.w_c
            or 0 in a.y_c)


def _w2d(w, a: ConvNDAttrs):
    """Depthwise weights as OIHW [C*M, 1, kH, kW]."""
    wc = to_canonical_array(canonical(w), a.weights_perm, a.w_c)
    return wc.reshape(a.w_c[0], 1, a.w_c[-2], a.w_c[-1]).contiguous()


def _nd_conv_fwd(x, w, a: ConvNDAttrs):
    if _nd_degenerate(a, x, w):
        return _empty_result(a.out_shape, x)
    a2 = as_depthwise_2d(a)
    if a2 is not None:
        return convolution2D(x, _w2d(w, a), a2)
    fmt = _nd_format(a, a.x_c, a.y_c)
    xc, wc = _nd_in(x, a.data_perm, a.x_c, fmt), _nd_in(w, a.weights_perm, a.w_c, fmt)
    sym, extra = _nd_split(a)
    if any(pb or pe for pb, pe in extra):
        xc = F.pad(xc, _nd_pad_arg(extra))
    y = torch.convolution(xc, wc, None, list(a.stride), sym, list(a.dilation), False,
                          [0] * len(sym), a.groups)
    return _nd_out(y, a.data_perm, a.out_shape, x.dtype)


def _nd_conv_dgrad(dy, w, shape_tensor, a: ConvNDAttrs):
    if _nd_degenerate(a, dy, w):
        return _empty_result(a.out_shape, dy)
    a2 = as_depthwise_2d(a)
    if a2 is not None:
        return convolution2DDataGradient(dy, _w2d(w, a), None, a2)
    fmt = _nd_format(a, a.x_c, a.y_c)
    dyc, wc = _nd_in(dy, a.data_perm, a.y_c, fmt), _nd_in(w, a.weights_perm, a.w_c, fmt)
    sym, extra = _nd_split(a)
    b, c, *s = a.x_c
    src = torch.empty((b, c, *(n + pb + pe for n, (pb, pe) in zip(s, extra))),
                      dtype=dyc.dtype, device=dyc.device, memory_format=fmt)
    dx = _conv_backward(dyc, src, wc, None, list(a.stride), sym, list(a.dilation), False,
                        [0] * len(sym), a.groups, [True, False, False])[0]
    if any(pb or pe for pb, pe in extra):
        dx = dx[(slice(None), slice(None), *(slice(pb, pb + n) for (pb, _), n in
                                              zip(extra, s)))]
    return _nd_out(dx, a.data_perm, a.out_shape, dy.dtype)


def _wgrad_3d_by_depth_taps(dyc, xc, a: ConvNDAttrs, sym) -> torch.Tensor:
    """The 3-D weights gradient of half types as kD 2-D weights gradients, one per depth tap,
    with depth folded into the batch: dw[:, :, t] = wgrad2d(dy [B*Do, O, Ho, Wo],
    x[:, :, t*rd - pd + sd*i] [B*Do, C, H, W]). cuDNN's 3-D half-type weight gradients round
    partial sums to the type (an error of 2^-8 of the terms, measured on the H200); its 2-D
    ones accumulate in float32 and round once, so this keeps the one rounding at 2-D speed
    (float32 3-D work instead was 30x cuDNN's time). `xc` is padded except for the symmetric
    part `sym`, which the depth axis gets here and the 2-D calls get for H and W."""
    b, o, do_, ho, wo = dyc.shape
    c = xc.shape[1]
    sd, sh, sw = a.stride
    rd, rh, rw = a.dilation
    kd, kh, kw = a.w_c[2:]
    cl = torch.channels_last if xc.is_contiguous(memory_format=torch.channels_last_3d) \
        and not xc.is_contiguous() else torch.contiguous_format
    if sym[0]:
        xc = F.pad(xc, (0, 0, 0, 0, sym[0], sym[0]))
    dy2 = dyc.transpose(1, 2).reshape(b * do_, o, ho, wo).contiguous(memory_format=cl)
    wv = torch.empty((o, a.w_c[1], kh, kw), dtype=dyc.dtype, device=dyc.device,
                     memory_format=cl)  # only its shape is read
    taps = []
    for t in range(kd):  # the kernel's depth taps (a handful), not elements
        xs = xc[:, :, t * rd: t * rd + sd * (do_ - 1) + 1: sd]
        x2 = xs.transpose(1, 2).reshape(b * do_, c, *xs.shape[3:]).contiguous(memory_format=cl)
        taps.append(_conv_backward(dy2, x2, wv, None, [sh, sw], list(sym[1:]), [rh, rw], False,
                                   [0, 0], a.groups, [False, True, False])[1])
    return torch.stack(taps, dim=2)


def _nd_conv_wgrad(dy, x, shape_tensor, a: ConvNDAttrs):
    if _nd_degenerate(a, dy, x):
        return _empty_result(a.out_shape, dy)
    a2 = as_depthwise_2d(a)
    if a2 is not None:
        wc = (a.w_c[0], 1, a.w_c[-2], a.w_c[-1])
        dw = convolution2DWeightsGradient(dy, x, None, dataclasses.replace(a2, out_shape=wc))
        return _nd_out(dw.reshape(a.w_c), a.weights_perm, a.out_shape, dy.dtype)
    fmt = _nd_format(a, a.x_c, a.y_c)
    dyc, xc = _nd_in(dy, a.data_perm, a.y_c, fmt), _nd_in(x, a.data_perm, a.x_c, fmt)
    sym, extra = _nd_split(a)
    if any(pb or pe for pb, pe in extra):
        xc = F.pad(xc, _nd_pad_arg(extra))
    if dyc.dtype in (torch.float16, torch.bfloat16) and len(a.stride) == 3:
        dw = _wgrad_3d_by_depth_taps(dyc, xc, a, sym)
        return _nd_out(dw, a.weights_perm, a.out_shape, dy.dtype)
    wv = torch.empty(a.w_c, dtype=dyc.dtype, device=dyc.device,  # only its shape is read
                     memory_format=fmt)
    dw = _conv_backward(dyc, xc, wv, None, list(a.stride), sym, list(a.dilation), False,
                        [0] * len(sym), a.groups, [False, True, False])[1]
    return _nd_out(dw, a.weights_perm, a.out_shape, dy.dtype)


for _f in ("convolution3D", "depthwiseConvolution2D", "depthwiseConvolution3D"):
    kernel(_f)(_nd_conv_fwd)
    kernel(_f + "DataGradient")(_nd_conv_dgrad)
    kernel(_f + "WeightsGradient")(_nd_conv_wgrad)
