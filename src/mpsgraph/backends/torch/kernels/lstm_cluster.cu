// LSTM recurrence on one thread-block cluster per direction (Hopper, sm_90+): the
// small-batch latency path of kernels/lstm_cluster.py, which documents the design. The
// helpers (cluster barrier, mbarriers, st.async, activations, step_time, seg_product) are
// cluster_common.cuh, written before this text.
//
// Compile-time constants (#defines written by lstm_cluster.py before this text):
//   HID hidden size, NB batch rows, NP rows padded to a power of two, CL cluster size,
//   U = HID / CL units per CTA;
//   forward product (K = HID, M = 4U): CJ_F columns x KP_F k's per thread, Q_F = HID / KP_F
//   lanes share a column group, NT_F = Q_F * 4U / CJ_F threads; backward (K = 4U, this CTA's
//   dA columns, M = HID, every unit): CJ_B, KP_B, Q_B = 4U / KP_B, NT_B = Q_B * HID / CJ_B the
//   same way; PAD_F / PAD_B floats of padding per K segment;
//   gate blocks BI BF BZ BO, activations AI AF AZ AO AG (0 none, 1 relu, 2 tanh, 3 sigmoid,
//   4 hardSigmoid); flags HAS_H0 HAS_C0 HAS_MASK PEEP REV BIDIR, backward DCS HAS_DHF
//   HAS_DCF DP HPREV.

// ---------------------------------------------------------------------------------------------
// forward
// ---------------------------------------------------------------------------------------------

extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT_F, 1)
lstm_cluster_fwd(const float* __restrict__ xp, const float* __restrict__ R,
                 const float* __restrict__ h0, const float* __restrict__ c0,
                 const float* __restrict__ mk, const float* __restrict__ pp,
                 float* __restrict__ zs, float* __restrict__ cs, float* __restrict__ hs,
                 int T, int s_xt, int s_xn, int s_rd, int s_rr, int s_rc, int s_h0n, int s_c0n,
                 int s_mt, int s_mn, int s_zt, int s_zn, int s_ct, int s_cn, int s_ht,
                 int s_hn) {
    extern __shared__ float4 smem4[];
    // [2][NP][ROW_F]: h_prev (times the mask) of the whole direction, double-buffered: step k
    // reads buffer k & 1, which every CTA of the cluster filled with its units' h (pushed)
    float* hsm = reinterpret_cast<float*>(smem4);
    float* pre = hsm + 2 * NP * ROW_F;  // [NP][4U]: the recurrent product
    float* xo = pre + NP * 4 * U;       // [NP][U]: this CTA's h (times the mask), staged
    const int r = (int)cluster_rank();
    const int d = blockIdx.y;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int q = tid % Q_F;    // K segment
    const int grp = tid / Q_F;  // column group: columns grp * CJ_F + cj (block b = col / U)
    const long long dH = (long long)d * HID;

    // this thread's part of R, kept in registers for all steps: w[kk][cj] = R[d][row][k]
    float w[KP_F][CJ_F];
#pragma unroll
    for (int cj = 0; cj < CJ_F; ++cj) {
        const int col = grp * CJ_F + cj;
        const long long row = (long long)(col / U) * HID + r * U + col % U;
        const float* rp = R + (long long)d * s_rd + row * s_rr + (long long)q * KP_F * s_rc;
#pragma unroll
        for (int kk = 0; kk < KP_F; ++kk) w[kk][cj] = rp[(long long)kk * s_rc];
    }
    for (int i = tid; i < 2 * NP * ROW_F; i += NT_F) hsm[i] = 0.0f;  // padded rows stay zero

    // the gate elements (n, uu) of this thread: cell carry, peephole, next xp
    // xv: xp of the current step, xn: of the next one (loads are issued two steps ahead of
    // their use, so that a step never waits for them)
    float c[CE_F], xv[CE_F][4], xn[CE_F][4];
#if HAS_MASK
    float mv[CE_F], mn[CE_F];  // masks of the steps after the current one / after that
#endif
#if PEEP
    float pw[CE_F][4];
#endif
#pragma unroll
    for (int e = 0; e < CE_F; ++e) {
        const int el = tid + e * NT_F;
        c[e] = 0.0f;
        if (el < NB * U) {
            const int n = el / U, u = r * U + el % U;
#if HAS_C0
            c[e] = c0[(long long)n * s_c0n + dH + u];
#endif
#if PEEP
#pragma unroll
            for (int b = 0; b < 4; ++b) pw[e][b] = pp[4 * dH + b * HID + u];
#endif
            const float* xb = xp + step_time(0, T, d) * s_xt + (long long)n * s_xn + 4 * dH + u;
#pragma unroll
            for (int b = 0; b < 4; ++b) xv[e][b] = xb[b * HID];
            if (T > 1) {
                xb = xp + step_time(1, T, d) * s_xt + (long long)n * s_xn + 4 * dH + u;
#pragma unroll
                for (int b = 0; b < 4; ++b) xn[e][b] = xb[b * HID];
            }
#if HAS_MASK
            mv[e] = T > 1 ? mk[step_time(1, T, d) * s_mt + (long long)n * s_mn + dH + u] : 0.0f;
            mn[e] = T > 2 ? mk[step_time(2, T, d) * s_mt + (long long)n * s_mn + dH + u] : 0.0f;
#endif
        }
    }
    // h0 (times m[t0]) into buffer 0 of this CTA
#if HAS_H0
    __syncthreads();  // after the zeroing
    {
        const long long t0 = step_time(0, T, d);
        for (int i = tid; i < NB * HID; i += NT_F) {
            const int n = i / HID, kk = i % HID;
            float v = h0[(long long)n * s_h0n + dH + kk];
#if HAS_MASK
            v *= mk[t0 * s_mt + (long long)n * s_mn + dH + kk];
#endif
            hsm[n * ROW_F + SEG_F(kk)] = v;
        }
    }
#endif
    __shared__ unsigned long long bars[2];  // bars[b]: buffer b of hsm received
    if (tid == 0) {
        mbar_init(&bars[0]);
        mbar_init(&bars[1]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // the zeroing (and h0) above are generic-proxy writes to rows that st.async (async proxy)
    // overwrites later
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    // every CTA of the cluster has started, zeroed its buffers and initialised its mbarriers
    // before anyone pushes
    cluster_arrive();
    cluster_wait();

    for (int k = 0; k < T; ++k) {
        const long long t = step_time(k, T, d);
        const bool prod = k > 0 || HAS_H0;
        const float* hin = hsm + (k & 1) * NP * ROW_F;
        if (k > 0) {  // h[k-1] of the whole direction: pushed at step k-1 by the cluster
            if (tid == 0) mbar_expect(&bars[k & 1], NB * HID * 4);
            mbar_wait(&bars[k & 1], ((k - 1) >> 1) & 1);
        }
        // 1. the recurrent product of this thread's columns over its K segment, summed over
        // the Q_F lanes of its group
        if (prod) seg_product<CJ_F, KP_F, PAD_F, Q_F, ROW_F>(hin, w, q, grp, lane, pre, 4 * U);
        __syncthreads();
        // 2. the gate math of this thread's elements; h (times the next step's mask) staged in
        // xo, then pushed into buffer (k + 1) & 1 of every CTA of the cluster; the cluster
        // arrives, and the outputs are stored after the arrival (its release fence then waits
        // for the shared-memory stores only)
        float gv[CE_F][4], hv[CE_F];
#pragma unroll
        for (int e = 0; e < CE_F; ++e) {
            const int el = tid + e * NT_F;
            if (el < NB * U) {
                const int n = el / U, uu = el % U;
                float a[4];
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    a[b] = xv[e][b] + (prod ? pre[n * 4 * U + b * U + uu] : 0.0f);
#if PEEP
                    a[b] += pw[e][b] * c[e];
#endif
                }
                gv[e][BI] = act<AI>(a[BI]);
                gv[e][BF] = act<AF>(a[BF]);
                gv[e][BZ] = act<AZ>(a[BZ]);
                gv[e][BO] = act<AO>(a[BO]);
                c[e] = gv[e][BF] * c[e] + gv[e][BI] * gv[e][BZ];
                hv[e] = gv[e][BO] * act<AG>(c[e]);
#if HAS_MASK
                xo[n * U + uu] = hv[e] * mv[e];  // mv: the next step's mask (0 after the last)
#else
                xo[n * U + uu] = hv[e];
#endif
            }
        }
        __syncthreads();
        if (k < T - 1) {
            float* dst = hsm + ((k + 1) & 1) * NP * ROW_F;
            for (int i = tid; i < NB * (U / 4) * CL; i += NT_F) {  // (float4 piece, rank)
                const int p = i / CL, n = p / (U / 4), u4 = (p % (U / 4)) * 4;
                st_async4(dst + n * ROW_F + SEG_F(r * U + u4), &bars[(k + 1) & 1], i % CL,
                          *reinterpret_cast<const float4*>(xo + n * U + u4));
            }
        }
        // the outputs, after the pushes (nobody in the cluster waits for them)
#pragma unroll
        for (int e = 0; e < CE_F; ++e) {
            const int el = tid + e * NT_F;
            if (el < NB * U) {
                const int n = el / U, u = r * U + el % U;
                hs[t * s_ht + (long long)n * s_hn + dH + u] = hv[e];
                float* zb = zs + t * s_zt + (long long)n * s_zn + 4 * dH + u;
#pragma unroll
                for (int b = 0; b < 4; ++b) zb[b * HID] = gv[e][b];
                cs[t * s_ct + (long long)n * s_cn + dH + u] = c[e];
                // rotate the prefetched inputs; load those of step k + 2 (of k + 3 for the
                // mask) while the cluster syncs
#pragma unroll
                for (int b = 0; b < 4; ++b) xv[e][b] = xn[e][b];
                if (k + 2 < T) {
                    const float* xb = xp + step_time(k + 2, T, d) * s_xt + (long long)n * s_xn +
                                      4 * dH + u;
#pragma unroll
                    for (int b = 0; b < 4; ++b) xn[e][b] = xb[b * HID];
                }
#if HAS_MASK
                mv[e] = mn[e];
                mn[e] = k + 3 < T ? mk[step_time(k + 3, T, d) * s_mt + (long long)n * s_mn +
                                       dH + u]
                                  : 0.0f;
#endif
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// backward
// ---------------------------------------------------------------------------------------------

// the read-only inputs of one backward step for one element (n, u)
struct StepIn {
    float ds, g[4], c, cp, dcs, mn;
};

extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT_B, 1)
lstm_cluster_bwd(const float* __restrict__ ds, const float* __restrict__ zs,
                 const float* __restrict__ cs, const float* __restrict__ R,
                 const float* __restrict__ c0, const float* __restrict__ mk,
                 const float* __restrict__ pp, const float* __restrict__ dcs,
                 const float* __restrict__ dhf, const float* __restrict__ dcf,
                 float* __restrict__ dA, float* __restrict__ dh0, float* __restrict__ dc0,
                 float* __restrict__ dpp, float* __restrict__ hp, int T, int s_dst, int s_dsn,
                 int s_zt, int s_zn, int s_ct, int s_cn, int s_rd, int s_rr, int s_rc, int s_c0n,
                 int s_mt, int s_mn, int s_dcst, int s_dcsn, int s_dhfn, int s_dcfn, int s_dat,
                 int s_dan, int s_dh0n, int s_dc0n, int s_dpn, int s_hpt, int s_hpn) {
    extern __shared__ float4 smem4[];
    // [2][CL][NP][U]: the partial dh of this CTA's units from each CTA of the cluster (pushed),
    // double-buffered: step j reads buffer j & 1
    float* recv = reinterpret_cast<float*>(smem4);
    float* xo = recv + 2 * CL * NP * U;  // [NP][ROW_B]: this CTA's dA (its 4U columns)
    float* part = xo + NP * ROW_B;       // [NP][HID]: this CTA's partial dh of all units
    const int r = (int)cluster_rank();
    const int d = blockIdx.y;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int q = tid % Q_B;    // segment of this CTA's 4U dA columns
    const int grp = tid / Q_B;  // units grp * CJ_B + cj (of the whole direction)
    const long long dH = (long long)d * HID;

    // w[kk][cj] = R[d][row][unit]: row of this CTA's dA column c = q * KP_B + kk (block c / U,
    // unit r * U + c % U)
    float w[KP_B][CJ_B];
#pragma unroll
    for (int kk = 0; kk < KP_B; ++kk) {
        const int c = q * KP_B + kk;
        const float* rp = R + (long long)d * s_rd +
                          ((long long)(c / U) * HID + r * U + c % U) * s_rr +
                          (long long)grp * CJ_B * s_rc;
#pragma unroll
        for (int cj = 0; cj < CJ_B; ++cj) w[kk][cj] = rp[(long long)cj * s_rc];
    }
    for (int i = tid; i < NP * ROW_B; i += NT_B) xo[i] = 0.0f;  // padded rows stay zero

    float dcc[CE_B];
#if PEEP
    float pw[CE_B][4];
#endif
#if DP
    float dpa[CE_B][4];
#endif
#pragma unroll
    for (int e = 0; e < CE_B; ++e) {
        const int el = tid + e * NT_B;
        dcc[e] = 0.0f;
        if (el < NB * U) {
            const int n = el / U, u = r * U + el % U;
            (void)n;
            (void)u;
#if HAS_DCF
            dcc[e] = dcf[(long long)n * s_dcfn + dH + u];
#endif
#pragma unroll
            for (int b = 0; b < 4; ++b) {
#if PEEP
                pw[e][b] = pp[4 * dH + b * HID + u];
#endif
#if DP
                dpa[e][b] = 0.0f;
#endif
            }
        }
    }
    __shared__ unsigned long long bars[2];  // bars[b]: buffer b of recv received
    if (tid == 0) {
        mbar_init(&bars[0]);
        mbar_init(&bars[1]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // every CTA of the cluster has started and initialised its mbarriers before anyone pushes
    cluster_arrive();
    cluster_wait();

    // the inputs of backward step j for element el (< NB * U)
    auto load_in = [&](int j, int el, StepIn& x) {
        const int k = T - 1 - j;
        const long long t = step_time(k, T, d), nn = el / U;
        const int u = r * U + el % U;
        x.ds = ds[t * s_dst + nn * s_dsn + dH + u];
        const float* zb = zs + t * s_zt + nn * s_zn + 4 * dH + u;
#pragma unroll
        for (int b = 0; b < 4; ++b) x.g[b] = zb[b * HID];
        x.c = cs[t * s_ct + nn * s_cn + dH + u];
        x.cp = 0.0f;
        if (k > 0) {
            x.cp = cs[step_time(k - 1, T, d) * s_ct + nn * s_cn + dH + u];
        } else {
#if HAS_C0
            x.cp = c0[nn * s_c0n + dH + u];
#endif
        }
        x.dcs = 0.0f;
#if DCS
        x.dcs = dcs[t * s_dcst + nn * s_dcsn + dH + u];
#endif
        x.mn = 1.0f;
#if HAS_MASK
        if (k < T - 1) x.mn = mk[step_time(k + 1, T, d) * s_mt + nn * s_mn + dH + u];
#endif
    };
    StepIn in[CE_B], in1[CE_B];  // the inputs of the current step and of the next one
#pragma unroll
    for (int e = 0; e < CE_B; ++e) {
        if (tid + e * NT_B < NB * U) {
            load_in(0, tid + e * NT_B, in[e]);
            if (T > 1) load_in(1, tid + e * NT_B, in1[e]);
        }
    }

    // (dA[t_next] @ R)[n, this CTA's unit uu]: the sum of the cluster's partials in buffer b
    auto rec = [&](int b, int n, int uu) {
        const float* src = recv + b * CL * NP * U + n * U + uu;
        float v = 0.0f;
#pragma unroll
        for (int c = 0; c < CL; ++c) v += src[c * NP * U];
        return v;
    };
    // wait for the partials that step j reads (pushed at step j - 1)
    auto receive = [&](int j) {
        if (tid == 0) mbar_expect(&bars[j & 1], NB * HID * 4);
        mbar_wait(&bars[j & 1], ((j - 1) >> 1) & 1);
    };

    for (int j = 0; j < T; ++j) {
        const int k = T - 1 - j;  // the forward processing index of this step
        const long long t = step_time(k, T, d);
        if (j > 0) receive(j);
        float dav[CE_B][4];
#pragma unroll
        for (int e = 0; e < CE_B; ++e) {
            const int el = tid + e * NT_B;
            if (el < NB * U) {
                const int n = el / U, uu = el % U, u = r * U + uu;
                const long long nn = n;
                (void)u;
                (void)nn;
                const StepIn& x = in[e];
                float dh = x.ds;
                if (j == 0) {
#if HAS_DHF
                    dh += dhf[nn * s_dhfn + dH + u];
#endif
                } else {
                    dh += rec(j & 1, n, uu) * x.mn;
                }
                const float gi = x.g[BI], gf = x.g[BF], gz = x.g[BZ], go = x.g[BO];
                const float cc = x.c, cp = x.cp;
                const float gc = act<AG>(cc);
                float dc = dcc[e] + dh * go * dact<AG>(gc);
                dc += x.dcs;
                float da[4];
                da[BI] = dc * gz * dact<AI>(gi);
                da[BF] = dc * cp * dact<AF>(gf);
                da[BZ] = dc * gi * dact<AZ>(gz);
                da[BO] = dh * gc * dact<AO>(go);
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    xo[n * ROW_B + SEG_B(b * U + uu)] = da[b];
                    dav[e][b] = da[b];
                }
                dcc[e] = dc * gf;
#if PEEP
#pragma unroll
                for (int b = 0; b < 4; ++b) dcc[e] += da[b] * pw[e][b];
#endif
#if DP
#pragma unroll
                for (int b = 0; b < 4; ++b) dpa[e][b] += da[b] * cp;
#endif
#if HPREV  // h[t] * m[t_next]: the operand of dR's product at t_next
                if (k < T - 1) hp[step_time(k + 1, T, d) * s_hpt + nn * s_hpn + dH + u] =
                    go * gc * x.mn;
#endif
            }
        }
        __syncthreads();
        // the partial dh of every unit from this CTA's dA columns, summed over the Q_B lanes
        seg_product<CJ_B, KP_B, PAD_B, Q_B, ROW_B>(xo, w, q, grp, lane, part, HID);
        __syncthreads();
        // each owner's units to its buffer (j + 1) & 1 (the last step's: for dh0)
        {
            float* dst = recv + ((j + 1) & 1) * CL * NP * U + r * NP * U;
            for (int i = tid; i < NB * HID / 4; i += NT_B) {
                const int n = i / (HID / 4), k4 = (i % (HID / 4)) * 4;
                st_async4(dst + n * U + k4 % U, &bars[(j + 1) & 1], k4 / U,
                          *reinterpret_cast<const float4*>(part + n * HID + k4));
            }
        }
        // dA to global memory after the pushes (nobody in the cluster waits for it)
#pragma unroll
        for (int e = 0; e < CE_B; ++e) {
            const int el = tid + e * NT_B;
            if (el < NB * U) {
                float* ab = dA + t * s_dat + (long long)(el / U) * s_dan + 4 * dH + r * U + el % U;
#pragma unroll
                for (int b = 0; b < 4; ++b) ab[b * HID] = dav[e][b];
                in[e] = in1[e];  // rotate; load step j + 2's inputs while the cluster syncs
                if (j + 2 < T) load_in(j + 2, el, in1[e]);
            }
        }
    }

    // dc0, the peephole partials, and dh0 = (dA[t_first] @ R[:, units]) * m[t_first]
    receive(T);
    const long long t0 = step_time(0, T, d);
#pragma unroll
    for (int e = 0; e < CE_B; ++e) {
        const int el = tid + e * NT_B;
        if (el < NB * U) {
            const int n = el / U, uu = el % U, u = r * U + uu;
            dc0[(long long)n * s_dc0n + dH + u] = dcc[e];
#if DP
#pragma unroll
            for (int b = 0; b < 4; ++b) dpp[(long long)n * s_dpn + 4 * dH + b * HID + u] = dpa[e][b];
#endif
            float v = rec(T & 1, n, uu);
#if HAS_MASK
            v *= mk[t0 * s_mt + (long long)n * s_mn + dH + u];
#endif
            dh0[(long long)n * s_dh0n + dH + u] = v;
        }
    }
}
