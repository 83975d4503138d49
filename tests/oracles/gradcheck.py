"""Finite-difference checks of vector-Jacobian products (float64, NumPy only).

Two tools:

* :func:`check_vjp` - a cheap randomized test of an analytic VJP: for random directions
  ``v`` (one per argument) and a random cotangent ``u`` it compares

      <u, J v>     (central difference of f along v)
      <J^T u, v>   (the analytic VJP, dotted with v)

  Both are scalars, so one check costs two evaluations of ``f`` per trial regardless of size.
* :func:`numeric_vjp` - the full finite-difference gradient ``J_k^T u`` for every argument
  ``k``, one element at a time (two evaluations of ``f`` per input element: for tiny inputs).

Central differences have error ``O(eps^2)``; for a function that is linear in each argument
separately and bilinear overall (a convolution in ``(x, w)``), perturbing all arguments at
once along ``v`` is still exact up to rounding, because the ``eps^2`` terms cancel.
"""

from __future__ import annotations

import numpy as np

__all__ = ["directional_derivative", "check_vjp", "numeric_vjp"]


def _as_f64_list(args):
    return [np.array(a, dtype=np.float64, copy=True, order="C") for a in args]


def directional_derivative(f, args, directions, eps=1e-6):
    """Central-difference estimate of ``J v = d/dt f(args + t * v)`` at ``t = 0``.

    ``directions`` has one array (or ``None`` for "hold this argument fixed") per argument.
    """
    args = _as_f64_list(args)
    plus = [a if v is None else a + eps * v for a, v in zip(args, directions, strict=True)]
    minus = [a if v is None else a - eps * v for a, v in zip(args, directions, strict=True)]
    fp = np.asarray(f(*plus), dtype=np.float64)
    fm = np.asarray(f(*minus), dtype=np.float64)
    return (fp - fm) / (2.0 * eps)


def check_vjp(f, args, vjp, *, wrt=None, eps=1e-6, trials=3, rtol=1e-6, atol=1e-9, seed=0):
    """Assert that ``vjp`` is the vector-Jacobian product of ``f`` at ``args``.

    Args:
        f: forward function, ``f(*args) -> ndarray`` (evaluated in float64).
        args: the point (list of arrays) at which the Jacobian is taken.
        vjp: analytic VJP, ``vjp(u, *args) -> sequence`` with one entry per argument: the
            gradient ``J_k^T u`` with the shape of ``args[k]``, or ``None`` when the argument is
            not differentiated.
        wrt: indices of the arguments to check (default: every argument whose ``vjp`` entry is
            not ``None``). The other arguments are held fixed.
        eps: finite-difference step.
        trials: number of random ``(u, v)`` pairs.
        rtol, atol: tolerance of the comparison of ``<u, J v>`` with ``<J^T u, v>``; ``rtol`` is
            relative to ``sum_k |J_k^T u| . |v_k|`` (the scale of the dot product, which stays
            meaningful when the dot product itself happens to be near 0).
        seed: seed of the random directions.

    Returns:
        list of ``(lhs, rhs)`` pairs, one per trial, for reporting.

    Raises:
        AssertionError: on a mismatch, or when a returned gradient has the wrong shape.
    """
    args = _as_f64_list(args)
    rng = np.random.default_rng(seed)
    y = np.asarray(f(*args), dtype=np.float64)
    results = []
    for _ in range(trials):
        u = rng.standard_normal(y.shape)
        grads = list(vjp(u, *args))
        if len(grads) != len(args):
            raise AssertionError(f"vjp returned {len(grads)} gradients for {len(args)} args")
        idx = [k for k, g in enumerate(grads) if g is not None] if wrt is None else list(wrt)
        dirs = [None] * len(args)
        rhs = 0.0
        scale = 0.0
        for k in idx:
            g = np.asarray(grads[k], dtype=np.float64)
            if g.shape != args[k].shape:
                raise AssertionError(f"gradient {k} has shape {g.shape}, expected "
                                     f"{args[k].shape}")
            v = rng.standard_normal(args[k].shape)
            dirs[k] = v
            rhs += float(np.sum(g * v))
            scale += float(np.sum(np.abs(g) * np.abs(v)))
        jv = directional_derivative(f, args, dirs, eps)
        lhs = float(np.sum(u * jv))
        if not abs(lhs - rhs) <= atol + rtol * scale:
            raise AssertionError(f"<u, J v> = {lhs!r} but <J^T u, v> = {rhs!r} "
                                 f"(|diff| {abs(lhs - rhs):.3e}, scale {scale:.3e})")
        results.append((lhs, rhs))
    return results


def numeric_vjp(f, args, u, eps=1e-6, wrt=None):
    """Full finite-difference ``J_k^T u`` for each argument ``k`` (for tiny inputs only).

    Element ``e`` of the gradient of argument ``k`` is
    ``(<u, f(.., a_k + eps * 1_e, ..)> - <u, f(.., a_k - eps * 1_e, ..)>) / (2 eps)``.

    Args:
        f: forward function ``f(*args) -> ndarray``.
        args: the point (list of arrays).
        u: cotangent with the shape of ``f(*args)``.
        eps: finite-difference step.
        wrt: indices of the arguments to differentiate (default: all); the others get ``None``.

    Returns:
        list with one float64 array (shape of ``args[k]``) or ``None`` per argument.
    """
    args = _as_f64_list(args)
    u = np.asarray(u, dtype=np.float64)
    idx = range(len(args)) if wrt is None else wrt
    out = [None] * len(args)
    for k in idx:
        g = np.zeros_like(args[k])
        flat = args[k].reshape(-1)  # a view: editing it perturbs args[k] in place
        gflat = g.reshape(-1)
        for e in range(flat.size):
            orig = flat[e]
            flat[e] = orig + eps
            fp = float(np.sum(u * np.asarray(f(*args), dtype=np.float64)))
            flat[e] = orig - eps
            fm = float(np.sum(u * np.asarray(f(*args), dtype=np.float64)))
            flat[e] = orig
            gflat[e] = (fp - fm) / (2.0 * eps)
        out[k] = g
    return out
