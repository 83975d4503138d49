"""Shared pieces of the property-based searches (hypothesis) of tests/property: the settings
profiles, feeds with every memory layout a caller can hand over, and dtype helpers.

Profiles (registered with hypothesis, never loaded globally, so other hypothesis tests keep
their own settings): "ci" (derandomized, a bounded number of examples per test) and "deep"
(>= 10,000 examples per test, random). MPSGRAPH_HYPOTHESIS=deep selects the deep one (default
ci); MPSGRAPH_HYPOTHESIS_EXAMPLES=N overrides the number of examples of every test.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import mpsgraph as mg

__all__ = ["search_settings", "DTYPES", "np_dtype", "rounded", "feed_recipe", "make_feed",
           "feed_of", "held_values", "LAYOUTS"]

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                          database=None, suppress_health_check=_QUIET, print_blob=False)
settings.register_profile("deep", max_examples=10_000, deadline=None, derandomize=False,
                          database=None, suppress_health_check=_QUIET, print_blob=True)
PROFILE = os.environ.get("MPSGRAPH_HYPOTHESIS", "ci")
if PROFILE not in ("ci", "deep"):
    raise ValueError(f"MPSGRAPH_HYPOTHESIS={PROFILE!r}: expected 'ci' or 'deep'")


def search_settings(ci_examples: int) -> settings:
    """The settings of one property test: the selected profile, with `ci_examples` examples
    under "ci" (the deep profile's count, >= 10,000, otherwise), or
    MPSGRAPH_HYPOTHESIS_EXAMPLES when set."""
    base = settings.get_profile(PROFILE)
    n = ci_examples if PROFILE == "ci" else base.max_examples
    override = os.environ.get("MPSGRAPH_HYPOTHESIS_EXAMPLES")
    if override:
        n = int(override)
    return settings(base, max_examples=n)


DTYPES = (mg.float32, mg.float16, mg.bFloat16)


def np_dtype(dt: mg.DataType) -> np.dtype:
    return np.dtype(dt.numpy_dtype)


def rounded(a: np.ndarray, dt: mg.DataType) -> np.ndarray:
    """float64 values rounded to `dt` (so that the feed holds exactly these values)."""
    return np.asarray(a, np.float64).astype(np_dtype(dt)).astype(np.float64)


# ---------------------------------------------------------------------------- feed layouts
# A feed is described by a recipe (drawn by hypothesis) and built from float64 values: the
# same values, in a given memory layout, in a given container. Layouts:
#   c          a fresh C-order array
#   transposed a C-order copy of a permutation of the axes, viewed back (strides permuted)
#   fortran    Fortran order
#   stepped    every k-th element of a bigger buffer along each axis, at an offset
#   broadcast  a read-only np.broadcast_to view (stride 0) of an array with size-1 axes: the
#              values are constant along those axes (built that way by make_feed)
#   odd1       size-1 axes given odd strides (a view of a bigger buffer); other axes C-order
#   negative   reversed along one axis (a negative stride; NumPy only: torch has none)
#   overlap    a read-only view whose elements alias: one axis steps by one element, like the
#              last (a sliding window; the values are a window of a random buffer)
# Containers: a NumPy array, a torch tensor (same strides; "negative" becomes a flipped copy's
# flip, i.e. a contiguous tensor), or an mg.TensorData on the device under test.
LAYOUTS = ("c", "transposed", "fortran", "stepped", "broadcast", "odd1", "negative",
           "overlap")


@st.composite
def feed_recipe(draw, rank: int):
    layout = draw(st.sampled_from(LAYOUTS))
    if layout == "transposed":
        params = tuple(draw(st.permutations(range(rank))))
    elif layout == "stepped":
        params = (tuple(draw(st.integers(1, 3)) for _ in range(rank)), draw(st.integers(0, 2)))
    elif layout == "broadcast":
        params = tuple(draw(st.booleans()) for _ in range(rank))  # axes held constant
    elif layout == "odd1":
        params = tuple(draw(st.sampled_from((-7, -1, 0, 2, 5, 13))) for _ in range(rank))
    elif layout in ("negative", "overlap"):
        params = draw(st.integers(0, max(rank - 1, 0)))
    else:
        params = None
    container = draw(st.sampled_from(("numpy", "numpy", "torch", "tensordata")))
    return layout, params, container


def _base_shape(shape, recipe):
    layout, params, _ = recipe
    if layout == "broadcast":
        return tuple(1 if held else s for s, held in zip(shape, params))
    return tuple(shape)


def _layout_numpy(v: np.ndarray, layout: str, params) -> np.ndarray:
    """`v` (already in its feed dtype) in the recipe's layout; equal values."""
    shape = v.shape
    if layout == "transposed" and v.ndim:
        perm = params
        inv = np.argsort(perm)
        return np.array(v.transpose(perm), order="C").transpose(inv)
    if layout == "fortran":
        return np.array(v, order="F")
    if layout == "stepped":
        steps, off = params
        big = np.zeros(tuple(s * k + off for s, k in zip(shape, steps)), v.dtype)
        view = big[(*(slice(off, off + s * k, k) for s, k in zip(shape, steps)), ...)]
        view[...] = v
        return view
    if layout == "broadcast":
        return v  # already broadcast by make_feed
    if layout == "odd1":
        # size-1 axes never address memory, so any stride is legal there; the others C-order
        strides = list(c_order_strides(shape, v.itemsize))
        for ax, s in enumerate(shape):
            if s == 1:
                strides[ax] = params[ax] * v.itemsize
        out = as_strided(np.zeros(max(v.size, 1), v.dtype), shape, tuple(strides))
        out[...] = v
        return out
    if layout == "negative" and v.ndim:
        ax = params
        return np.flip(np.array(np.flip(v, ax), order="C"), ax)
    return np.array(v, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)


def c_order_strides(shape, item):
    out, step = [], item
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _to_torch(a: np.ndarray, base: np.ndarray | None, recipe):
    """A torch tensor with the same values and (where torch can express them) strides."""
    import torch

    layout = recipe[0]
    if layout == "broadcast":
        return _torch_plain(base).expand(a.shape)
    if layout == "negative" or a.size == 0:
        return _torch_plain(a)
    # the same strides (size-1 axes' made non-negative: torch has no negative strides) on a
    # copy of the memory `a` spans
    item = a.itemsize
    strides = [abs(s) // item if n == 1 else s // item for s, n in zip(a.strides, a.shape)]
    span = sum(s * (n - 1) for s, n in zip(strides, a.shape)) + 1
    flat = np.zeros(span, a.dtype)
    as_strided(flat, a.shape, tuple(s * item for s in strides))[...] = a
    return torch.as_strided(_torch_plain(flat), a.shape, strides)


def _torch_plain(a: np.ndarray):
    import torch

    a = np.array(a, order="C")
    if a.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _values(rng, shape, dist):
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "uniform":
        return rng.uniform(-0.8, 0.8, shape)
    return (rng.uniform(size=shape) > 0.3).astype(np.float64)


def make_feed(rng: np.random.Generator, shape, dt: mg.DataType, recipe, device: str,
              dist: str = "normal"):
    """(feed, the float64 values it holds). Values are drawn from `dist` ("normal": standard
    normal, "uniform": U(-0.8, 0.8), "binary": 0 or 1), rounded to `dt`, in the recipe's layout
    and container (a "broadcast" recipe draws them constant along the axes it holds)."""
    shape = tuple(int(s) for s in shape)
    npdt = np_dtype(dt)
    base = rounded(_values(rng, _base_shape(shape, recipe), dist), dt)
    full = np.broadcast_to(base, shape)
    layout, params, container = recipe
    if layout == "overlap" and len(shape) >= 2 and params < len(shape) - 1 and all(shape):
        strides = list(c_order_strides(shape, 1))
        strides[params] = 1
        span = sum(s * (n - 1) for s, n in zip(strides, shape)) + 1
        buf = rounded(_values(rng, (span,), dist), dt).astype(npdt)
        item = buf.itemsize
        a = as_strided(buf, shape, tuple(s * item for s in strides), writeable=False)
        full = np.asarray(a, np.float64)
        base = None
    elif layout == "broadcast":
        a = np.broadcast_to(base.astype(npdt), shape)
    else:
        a = _layout_numpy(np.array(full, npdt), layout, params)
    if container == "numpy":
        return a, np.array(full)
    t = _to_torch(a, None if base is None else base.astype(npdt), recipe)
    if container == "torch":
        return t, np.array(full)
    return mg.TensorData(t if device != "cpu" else a, device=device), np.array(full)


def feed_of(values: np.ndarray, dt: mg.DataType, recipe, device: str):
    """(feed, the float64 values it holds) for given values, rounded to `dt`, in the recipe's
    layout and container ("broadcast" becomes "c": given values are not constant along an
    axis)."""
    layout, params, container = recipe
    if layout in ("broadcast", "overlap"):
        layout = "c"
    full = rounded(values, dt)
    a = _layout_numpy(full.astype(np_dtype(dt)), layout, params)
    if container == "numpy":
        return a, full
    t = _to_torch(a, None, (layout, params, container))
    if container == "torch":
        return t, full
    return mg.TensorData(t if device != "cpu" else a, device=device), full


def held_values(feed) -> np.ndarray:
    """The float64 values a feed (array, tensor or TensorData) holds now."""
    if isinstance(feed, mg.TensorData):
        return np.asarray(feed.numpy(), np.float64)
    if isinstance(feed, np.ndarray):
        return np.asarray(feed, np.float64)
    import torch

    return feed.detach().cpu().to(torch.float64).numpy()
