"""The fused Triton LSTM step kernels against the step written in plain torch, for every
activation at every gate, peephole, both gate orders, a per-step cell gradient; outputs are
poisoned (NaN) before the launch so that an element the kernel fails to write is caught.
On the CPU they run under TRITON_INTERPRET=1 (set by this module when no GPU is present)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

lstm_cell, = triton_kernels("lstm_cell")

DEVICES = ["cpu"] if not torch.cuda.is_available() else ["cuda"]


def act(kind, a):
    return [lambda v: v, torch.relu, torch.tanh, torch.sigmoid,
            lambda v: torch.clamp(0.2 * v + 0.5, 0, 1)][kind](a)


def dact(kind, y):
    return [torch.ones_like(y), (y > 0).to(y.dtype), 1 - y * y, y * (1 - y),
            ((y > 0) & (y < 1)).to(y.dtype) * 0.2][kind]


CASES = list(itertools.product(range(5), [False, True], [False, True]))  # act, peep, fgl


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,peep,fgl", CASES)
def test_forward_and_backward_step(device, kind, peep, fgl):
    g = torch.Generator().manual_seed(1000 * kind + 10 * peep + fgl)
    N, H = 5, 7
    r = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    blocks = (0, 2, 1, 3) if fgl else (0, 1, 2, 3)
    # each gate gets a different activation, cycling with `kind`
    acts = tuple((kind + k) % 5 for k in range(5))
    a, c_prev = r(N, 4 * H), r(N, H)
    p = r(4, H) if peep else None
    nan = float("nan")
    z = torch.full((N, 3 * 4 * H), nan, device=device)[:, 4 * H:8 * H]  # strided rows
    c = torch.full((N, 2 * H), nan, device=device)[:, :H]
    h = torch.full((N, 2 * H), nan, device=device)[:, H:]
    lstm_cell.forward_step(a, c_prev, p, z, c, h, blocks, acts)
    # reference
    aa = a.clone().view(N, 4, H)
    if peep:
        aa = aa + p[None] * c_prev[:, None]
    gate = {name: act(acts[k], aa[:, blocks[k]]) for k, name in enumerate("ifzo")}
    c_ref = gate["f"] * c_prev + gate["i"] * gate["z"]
    h_ref = gate["o"] * act(acts[4], c_ref)
    z_ref = torch.empty(N, 4, H, device=device)
    for k, name in enumerate("ifzo"):
        z_ref[:, blocks[k]] = gate[name]
    torch.testing.assert_close(z, z_ref.view(N, 4 * H), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(c, c_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(h, h_ref, rtol=1e-5, atol=1e-6)

    dh, dcc, dcs = r(N, H), r(N, H), r(N, H)
    da = torch.full((N, 4 * H), nan, device=device)
    dco = torch.full((N, H), nan, device=device)
    lstm_cell.backward_step(dh, dcc, z, c, c_prev, dcs, p, da, dco, blocks, acts)
    gc = act(acts[4], c_ref)
    dc = dcc + dh * gate["o"] * dact(acts[4], gc) + dcs
    d = {"i": dc * gate["z"] * dact(acts[0], gate["i"]),
         "f": dc * c_prev * dact(acts[1], gate["f"]),
         "z": dc * gate["i"] * dact(acts[2], gate["z"]),
         "o": dh * gc * dact(acts[3], gate["o"])}
    da_ref = torch.empty(N, 4, H, device=device)
    for k, name in enumerate("ifzo"):
        da_ref[:, blocks[k]] = d[name]
    dco_ref = dc * gate["f"]
    if peep:
        dco_ref = dco_ref + (da_ref * p[None]).sum(1)
    torch.testing.assert_close(da, da_ref.view(N, 4 * H), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dco, dco_ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_propagates_and_empty_batch(device):
    N, H = 3, 4
    a = torch.zeros(N, 4 * H, device=device)
    a[1, 2] = float("nan")
    c_prev = torch.zeros(N, H, device=device)
    z = torch.empty(N, 4 * H, device=device)
    c, h = torch.empty(N, H, device=device), torch.empty(N, H, device=device)
    lstm_cell.forward_step(a, c_prev, None, z, c, h, (0, 1, 2, 3), (3, 3, 2, 3, 2))
    assert torch.isnan(h[1, 2]) and torch.isfinite(h[0]).all()
    e = torch.empty(0, 4 * H, device=device)
    lstm_cell.forward_step(e, torch.empty(0, H, device=device), None, e,
                           torch.empty(0, H, device=device), torch.empty(0, H, device=device),
                           (0, 1, 2, 3), (3, 3, 2, 3, 2))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,peep", [(0, True), (3, False)])
def test_backward_step_sums_dstate_and_the_masked_carry(device, kind, peep):
    # dh = carry * carry_mask + dstate in the kernel, as the unfused sum given as dh
    g = torch.Generator().manual_seed(7 + kind)
    N, H = 5, 7
    r = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    blocks, acts = (0, 1, 2, 3), tuple((kind + k) % 5 for k in range(5))
    z, c, c_prev, dcc = torch.rand(N, 4 * H).to(device), r(N, H), r(N, H), r(N, H)
    p = r(4, H) if peep else None
    carry = torch.full((N, 2 * H), float("nan"), device=device)[:, :H]  # strided rows
    carry.copy_(r(N, H))
    ds, m = r(N, H), (torch.rand(N, H, generator=g) > 0.4).float().to(device)
    outs = []
    for kw in ({"dh": ds + carry * m}, {"dh": carry, "dstate": ds, "carry_mask": m},
               {"dh": ds + carry}, {"dh": carry, "dstate": ds},
               {"dh": carry * m}, {"dh": carry, "carry_mask": m}):
        da = torch.full((N, 4 * H), float("nan"), device=device)
        dco = torch.full((N, H), float("nan"), device=device)
        dh = kw.pop("dh")
        lstm_cell.backward_step(dh, dcc, z, c, c_prev, None, p, da, dco, blocks, acts, **kw)
        outs.append((da, dco))
    for want, got in zip(outs[::2], outs[1::2]):  # (the kernel may fuse the sum as an FMA)
        torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got[1], want[1], rtol=1e-6, atol=1e-6)
