// GRU and single-gate RNN recurrence on one thread-block cluster per direction (Hopper,
// sm_90+): the small-batch float32 latency path of kernels/gru_cluster.py, which documents the
// design (the LSTM's, lstm_cluster.py). The helpers (cluster barrier, mbarriers, st.async,
// activations, step_time, seg_product) are cluster_common.cuh, written before this text.
//
// Compile-time constants (#defines written by gru_cluster.py): HID NB NP CL U, G gates (1 or
// 3), the product shapes CJ_F KP_F Q_F NT_F PAD_F (forward, K = HID, M = G*U) and CJ_B KP_B
// Q_B NT_B PAD_B (backward, K = G*U, M = HID); BZ BR the z / r gate blocks (o is block 2),
// activations AZ AR AO (the single gate's: AZ); flags RA (resetAfter) TWO (GRU without
// resetAfter: two exchanges per step) FLIPZ HAS_H0 HAS_MASK HAS_B2 REV BIDIR HAS_DHF.
//
// This CTA's G*U columns c (forward outputs, backward dA columns): gate c / U in the logical
// order (z, r, o), unit r * U + c % U; R row rblock(c / U) * HID + unit.

__device__ __forceinline__ int rblock(int lb) {
#if G == 1
    (void)lb;
    return 0;
#else
    return lb == 0 ? BZ : (lb == 1 ? BR : 2);
#endif
}

// ---------------------------------------------------------------------------------------------
// forward
// ---------------------------------------------------------------------------------------------

extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT_F, 1)
gru_cluster_fwd(const float* __restrict__ xp, const float* __restrict__ R,
                const float* __restrict__ h0, const float* __restrict__ mk,
                const float* __restrict__ b2, float* __restrict__ zs, float* __restrict__ hs,
                int T, int s_xt, int s_xn, int s_rd, int s_rr, int s_rc, int s_h0n, int s_mt,
                int s_mn, int s_zt, int s_zn, int s_ht, int s_hn) {
    extern __shared__ float4 smem4[];
    // [2][NP][ROW_F]: h_prev (times the mask) of the whole direction, double-buffered (step k
    // reads buffer k & 1, filled by the cluster's pushes at step k - 1)
    float* hsm = reinterpret_cast<float*>(smem4);
#if TWO
    float* hrs = hsm + 2 * NP * ROW_F;  // [2][NP][ROW_F]: hm * r of the whole direction
    float* pre = hrs + 2 * NP * ROW_F;  // [NP][G*U]: the recurrent products
#else
    float* pre = hsm + 2 * NP * ROW_F;
#endif
    float* xo = pre + NP * G * U;  // [NP][U]: this CTA's pushed values, staged
    const int r = (int)cluster_rank();
    const int d = blockIdx.y;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int q = tid % Q_F;
    const int grp = tid / Q_F;
    const long long dH = (long long)d * HID, dG = (long long)d * G * HID;
#if TWO
    // warp-uniform: whether this warp's columns meet the z / r blocks (phase A's product) and
    // the o block (phase B's)
    const int wg0 = (tid & ~31) / Q_F, wg1 = ((tid & ~31) + 31) / Q_F;
    const bool act_a = wg0 * CJ_F < 2 * U, act_b = (wg1 + 1) * CJ_F > 2 * U;
#endif

    float w[KP_F][CJ_F];  // this thread's part of R, in registers for all steps
#pragma unroll
    for (int cj = 0; cj < CJ_F; ++cj) {
        const int col = grp * CJ_F + cj;
        const long long row = (long long)rblock(col / U) * HID + r * U + col % U;
        const float* rp = R + (long long)d * s_rd + row * s_rr + (long long)q * KP_F * s_rc;
#pragma unroll
        for (int kk = 0; kk < KP_F; ++kk) w[kk][cj] = rp[(long long)kk * s_rc];
    }
#if TWO
    for (int i = tid; i < 4 * NP * ROW_F; i += NT_F) hsm[i] = 0.0f;  // hsm and hrs
#else
    for (int i = tid; i < 2 * NP * ROW_F; i += NT_F) hsm[i] = 0.0f;  // padded rows stay zero
#endif

    // per gate element (n, unit): h_prev (unmasked), x' of this step and the next (logical
    // gate order), masks of the steps ahead (mc: this step's, for hm * r)
    float xv[CE_F][G], xn[CE_F][G];
#if G == 3
    float hp[CE_F];
#endif
#if HAS_MASK
    float mv[CE_F], mn[CE_F];
#if TWO
    float mc[CE_F];
#endif
#endif
#if RA && HAS_B2
    float b2v[CE_F];
#endif
#pragma unroll
    for (int e = 0; e < CE_F; ++e) {
        const int el = tid + e * NT_F;
#if G == 3
        hp[e] = 0.0f;
#endif
        if (el < NB * U) {
            const int n = el / U, u = r * U + el % U;
#if HAS_H0 && G == 3
            hp[e] = h0[(long long)n * s_h0n + dH + u];
#endif
#if RA && HAS_B2
            b2v[e] = b2[dH + u];
#endif
            const float* xb = xp + step_time(0, T, d) * s_xt + (long long)n * s_xn + dG + u;
#pragma unroll
            for (int g = 0; g < G; ++g) xv[e][g] = xb[rblock(g) * HID];
            if (T > 1) {
                xb = xp + step_time(1, T, d) * s_xt + (long long)n * s_xn + dG + u;
#pragma unroll
                for (int g = 0; g < G; ++g) xn[e][g] = xb[rblock(g) * HID];
            }
#if HAS_MASK
            mv[e] = T > 1 ? mk[step_time(1, T, d) * s_mt + (long long)n * s_mn + dH + u] : 0.0f;
            mn[e] = T > 2 ? mk[step_time(2, T, d) * s_mt + (long long)n * s_mn + dH + u] : 0.0f;
#if TWO
            mc[e] = mk[step_time(0, T, d) * s_mt + (long long)n * s_mn + dH + u];
#endif
#endif
        }
    }
#if HAS_H0
    __syncthreads();  // after the zeroing: h0 (times m[t0]) into buffer 0
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
    __shared__ unsigned long long bars[4];  // bars[b]: hsm buffer b received; [2 + b]: hrs's
    if (tid == 0) {
#pragma unroll
        for (int b = 0; b < 4; ++b) mbar_init(&bars[b]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    cluster_arrive();
    cluster_wait();

    for (int k = 0; k < T; ++k) {
        const long long t = step_time(k, T, d);
        const bool prod = k > 0 || HAS_H0;
        if (k > 0) {
            if (tid == 0) mbar_expect(&bars[k & 1], NB * HID * 4);
            mbar_wait(&bars[k & 1], ((k - 1) >> 1) & 1);
        }
        const float* hin = hsm + (k & 1) * NP * ROW_F;
#if TWO
        if (prod && act_a)
            seg_product<CJ_F, KP_F, PAD_F, Q_F, ROW_F>(hin, w, q, grp, lane, pre, G * U);
#else
        if (prod) seg_product<CJ_F, KP_F, PAD_F, Q_F, ROW_F>(hin, w, q, grp, lane, pre, G * U);
#endif
        __syncthreads();
        float hv[CE_F], gv[CE_F][G];
#pragma unroll
        for (int e = 0; e < CE_F; ++e) {
            const int el = tid + e * NT_F;
            if (el < NB * U) {
                const int n = el / U, uu = el % U;
                const float* pr = pre + n * G * U + uu;
#if G == 1
                const float a = xv[e][0] + (prod ? pr[0] : 0.0f);
                gv[e][0] = a;  // zState: the pre-activation
                hv[e] = act<AZ>(a);
#else
                const float z = act<AZ>(xv[e][0] + (prod ? pr[0] : 0.0f));
                const float rr = act<AR>(xv[e][1] + (prod ? pr[U] : 0.0f));
                gv[e][0] = z;
                gv[e][1] = rr;
#if RA
                float qv = prod ? pr[2 * U] : 0.0f;
#if HAS_B2
                qv += b2v[e];
#endif
                const float o = act<AO>(xv[e][2] + qv * rr);
                gv[e][2] = o;
#if FLIPZ
                hv[e] = (1.0f - z) * hp[e] + z * o;
#else
                hv[e] = z * hp[e] + (1.0f - z) * o;
#endif
#else  // TWO, phase A: hm * r of this CTA's units, for every CTA's phase B product
#if HAS_MASK
                xo[n * U + uu] = hp[e] * mc[e] * rr;
#else
                xo[n * U + uu] = hp[e] * rr;
#endif
#endif
#endif
#if !TWO
#if HAS_MASK
                xo[n * U + uu] = hv[e] * mv[e];  // mv: the next step's mask (0 after the last)
#else
                xo[n * U + uu] = hv[e];
#endif
#endif
            }
        }
        __syncthreads();
#if TWO
        {  // push hm * r into hrs buffer k & 1 of every CTA; phase B once all have arrived
            float* dst = hrs + (k & 1) * NP * ROW_F;
            for (int i = tid; i < NB * (U / 4) * CL; i += NT_F) {
                const int p = i / CL, n = p / (U / 4), u4 = (p % (U / 4)) * 4;
                st_async4(dst + n * ROW_F + SEG_F(r * U + u4), &bars[2 + (k & 1)], i % CL,
                          *reinterpret_cast<const float4*>(xo + n * U + u4));
            }
            if (tid == 0) mbar_expect(&bars[2 + (k & 1)], NB * HID * 4);
            mbar_wait(&bars[2 + (k & 1)], (k >> 1) & 1);
            if (prod && act_b)
                seg_product<CJ_F, KP_F, PAD_F, Q_F, ROW_F>(dst, w, q, grp, lane, pre, G * U);
            __syncthreads();
#pragma unroll
            for (int e = 0; e < CE_F; ++e) {
                const int el = tid + e * NT_F;
                if (el < NB * U) {
                    const int n = el / U, uu = el % U;
                    const float o = act<AO>(xv[e][2] + (prod ? pre[n * G * U + 2 * U + uu] : 0.0f));
                    const float z = gv[e][0];
                    gv[e][2] = o;
#if FLIPZ
                    hv[e] = (1.0f - z) * hp[e] + z * o;
#else
                    hv[e] = z * hp[e] + (1.0f - z) * o;
#endif
#if HAS_MASK
                    xo[n * U + uu] = hv[e] * mv[e];
#else
                    xo[n * U + uu] = hv[e];
#endif
                }
            }
            __syncthreads();
        }
#endif
        if (k < T - 1) {
            float* dst = hsm + ((k + 1) & 1) * NP * ROW_F;
            for (int i = tid; i < NB * (U / 4) * CL; i += NT_F) {  // (float4 piece, rank)
                const int p = i / CL, n = p / (U / 4), u4 = (p % (U / 4)) * 4;
                st_async4(dst + n * ROW_F + SEG_F(r * U + u4), &bars[(k + 1) & 1], i % CL,
                          *reinterpret_cast<const float4*>(xo + n * U + u4));
            }
        }
        // the outputs after the pushes; rotate and prefetch the inputs
#pragma unroll
        for (int e = 0; e < CE_F; ++e) {
            const int el = tid + e * NT_F;
            if (el < NB * U) {
                const int n = el / U, u = r * U + el % U;
                hs[t * s_ht + (long long)n * s_hn + dH + u] = hv[e];
                float* zb = zs + t * s_zt + (long long)n * s_zn + dG + u;
#pragma unroll
                for (int g = 0; g < G; ++g) zb[rblock(g) * HID] = gv[e][g];
#if G == 3
                hp[e] = hv[e];
#endif
#pragma unroll
                for (int g = 0; g < G; ++g) xv[e][g] = xn[e][g];
                if (k + 2 < T) {
                    const float* xb = xp + step_time(k + 2, T, d) * s_xt + (long long)n * s_xn +
                                      dG + u;
#pragma unroll
                    for (int g = 0; g < G; ++g) xn[e][g] = xb[rblock(g) * HID];
                }
#if HAS_MASK
#if TWO
                mc[e] = mv[e];
#endif
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

// the read-only inputs of one backward step for one element (n, u): dstate, zState (logical
// gate order; the single gate's pre-activation), h_prev, q (resetAfter), the masks of t_next
// and (TWO) of t
struct GruIn {
    float ds, g[G], hp, q, mn, mt;
};

extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT_B, 1)
gru_cluster_bwd(const float* __restrict__ ds, const float* __restrict__ zs,
                const float* __restrict__ hf, const float* __restrict__ R,
                const float* __restrict__ h0, const float* __restrict__ mk,
                const float* __restrict__ qb, const float* __restrict__ dhf,
                float* __restrict__ dA, float* __restrict__ dq, float* __restrict__ dh0, int T,
                int s_dst, int s_dsn, int s_zt, int s_zn, int s_hft, int s_hfn, int s_rd,
                int s_rr, int s_rc, int s_h0n, int s_mt, int s_mn, int s_qt, int s_qn,
                int s_dhfn, int s_dat, int s_dan, int s_dqt, int s_dqn, int s_dh0n) {
    extern __shared__ float4 smem4[];
    // [2][CL][NP][U]: the partial dh (rec) of this CTA's units from each CTA, double-buffered
    float* recv = reinterpret_cast<float*>(smem4);
    float* xo = recv + 2 * CL * NP * U;  // [NP][ROW_B]: this CTA's dA columns (rec operand)
    float* part = xo + NP * ROW_B;       // [NP][HID]: this CTA's partial of every unit
#if TWO
    float* recv2 = part + NP * HID;       // [2][CL][NP][U]: the partial u = da_o @ R_o
    float* xb = recv2 + 2 * CL * NP * U;  // [NP][ROW_B]: da_o in the o segments, else zeros
#endif
    const int r = (int)cluster_rank();
    const int d = blockIdx.y;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int q = tid % Q_B;
    const int grp = tid / Q_B;
    const long long dH = (long long)d * HID, dG = (long long)d * G * HID;

    float w[KP_B][CJ_B];  // w[kk][cj] = R[d][row of column q * KP_B + kk][unit grp * CJ_B + cj]
#pragma unroll
    for (int kk = 0; kk < KP_B; ++kk) {
        const int c = q * KP_B + kk;
        const float* rp = R + (long long)d * s_rd +
                          ((long long)rblock(c / U) * HID + r * U + c % U) * s_rr +
                          (long long)grp * CJ_B * s_rc;
#pragma unroll
        for (int cj = 0; cj < CJ_B; ++cj) w[kk][cj] = rp[(long long)cj * s_rc];
    }
    for (int i = tid; i < NP * ROW_B; i += NT_B) xo[i] = 0.0f;
#if TWO
    for (int i = tid; i < NP * ROW_B; i += NT_B) xb[i] = 0.0f;
#endif
    float carry[CE_B];
#pragma unroll
    for (int e = 0; e < CE_B; ++e) carry[e] = 0.0f;
    __shared__ unsigned long long bars[4];  // bars[b]: recv buffer b received; [2 + b]: recv2's
    if (tid == 0) {
#pragma unroll
        for (int b = 0; b < 4; ++b) mbar_init(&bars[b]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_arrive();
    cluster_wait();

    auto load_in = [&](int j, int el, GruIn& x) {
        const int k = T - 1 - j;
        const long long t = step_time(k, T, d), nn = el / U;
        const int u = r * U + el % U;
        x.ds = ds[t * s_dst + nn * s_dsn + dH + u];
        const float* zb = zs + t * s_zt + nn * s_zn + dG + u;
#pragma unroll
        for (int g = 0; g < G; ++g) x.g[g] = zb[rblock(g) * HID];
        x.hp = 0.0f;
#if G == 3
        if (k > 0) {
            x.hp = hf[step_time(k - 1, T, d) * s_hft + nn * s_hfn + dH + u];
        } else {
#if HAS_H0
            x.hp = h0[nn * s_h0n + dH + u];
#endif
        }
#endif
        x.q = 0.0f;
#if RA
        x.q = qb[t * s_qt + nn * s_qn + dH + u];
#endif
        x.mn = 1.0f;
        x.mt = 1.0f;
#if HAS_MASK
        if (k < T - 1) x.mn = mk[step_time(k + 1, T, d) * s_mt + nn * s_mn + dH + u];
#if TWO
        x.mt = mk[t * s_mt + nn * s_mn + dH + u];
#endif
#endif
    };
    GruIn in[CE_B], in1[CE_B];
#pragma unroll
    for (int e = 0; e < CE_B; ++e) {
        if (tid + e * NT_B < NB * U) {
            load_in(0, tid + e * NT_B, in[e]);
            if (T > 1) load_in(1, tid + e * NT_B, in1[e]);
        }
    }
    // the sum over the cluster's partials of unit uu, row n, in buffer b of `buf`
    auto rec = [&](const float* buf, int b, int n, int uu) {
        const float* src = buf + b * CL * NP * U + n * U + uu;
        float v = 0.0f;
#pragma unroll
        for (int c = 0; c < CL; ++c) v += src[c * NP * U];
        return v;
    };
    // every owner's units of `part` into buffer b of its `buf`, completing bars[bar]
    auto push = [&](float* buf, int b, int bar) {
        float* dst = buf + b * CL * NP * U + r * NP * U;
        for (int i = tid; i < NB * HID / 4; i += NT_B) {
            const int n = i / (HID / 4), k4 = (i % (HID / 4)) * 4;
            st_async4(dst + n * U + k4 % U, &bars[bar], k4 / U,
                      *reinterpret_cast<const float4*>(part + n * HID + k4));
        }
    };
    auto receive = [&](int j) {  // the rec partials step j reads (pushed at step j - 1)
        if (tid == 0) mbar_expect(&bars[j & 1], NB * HID * 4);
        mbar_wait(&bars[j & 1], ((j - 1) >> 1) & 1);
    };

    for (int j = 0; j < T; ++j) {
        const int k = T - 1 - j;
        const long long t = step_time(k, T, d);
        if (j > 0) receive(j);
        float dav[CE_B][G], dqv[CE_B];
        (void)dqv;
#pragma unroll
        for (int e = 0; e < CE_B; ++e) {
            const int el = tid + e * NT_B;
            if (el < NB * U) {
                const int n = el / U, uu = el % U;
                const GruIn& x = in[e];
                float dh = x.ds + carry[e];
                if (j == 0) {
#if HAS_DHF
                    dh += dhf[(long long)n * s_dhfn + dH + r * U + uu];
#endif
                } else {
                    dh += rec(recv, j & 1, n, uu) * x.mn;
                }
#if G == 1
                const float da = dh * dact<AZ>(act<AZ>(x.g[0]));
                xo[n * ROW_B + SEG_B(uu)] = da;
                dav[e][0] = da;
                carry[e] = 0.0f;
#else
                const float z = x.g[0], rr = x.g[1], o = x.g[2];
                (void)rr;
#if FLIPZ
                const float dz = dh * (o - x.hp), dov = dh * z;
                carry[e] = dh * (1.0f - z);
#else
                const float dz = dh * (x.hp - o), dov = dh * (1.0f - z);
                carry[e] = dh * z;
#endif
                const float dao = dov * dact<AO>(o);
                dav[e][0] = dz * dact<AZ>(z);
                dav[e][2] = dao;
                xo[n * ROW_B + SEG_B(uu)] = dav[e][0];
#if RA
                dav[e][1] = dao * x.q * dact<AR>(rr);
                dqv[e] = dao * rr;
                xo[n * ROW_B + SEG_B(U + uu)] = dav[e][1];
                xo[n * ROW_B + SEG_B(2 * U + uu)] = dqv[e];
#else
                xb[n * ROW_B + SEG_B(2 * U + uu)] = dao;
#endif
#endif
            }
        }
        __syncthreads();
#if TWO
        // phase B: u = da_o[t] @ R_o of every unit (the partials of this CTA's da_o columns,
        // summed by each owner), then da_r and the carry's u r m[t]
        seg_product<CJ_B, KP_B, PAD_B, Q_B, ROW_B>(xb, w, q, grp, lane, part, HID);
        __syncthreads();
        push(recv2, j & 1, 2 + (j & 1));
        if (tid == 0) mbar_expect(&bars[2 + (j & 1)], NB * HID * 4);
        mbar_wait(&bars[2 + (j & 1)], (j >> 1) & 1);
#pragma unroll
        for (int e = 0; e < CE_B; ++e) {
            const int el = tid + e * NT_B;
            if (el < NB * U) {
                const int n = el / U, uu = el % U;
                const GruIn& x = in[e];
                const float uv = rec(recv2, j & 1, n, uu), rr = x.g[1];
                dav[e][1] = uv * x.hp * x.mt * dact<AR>(rr);
                carry[e] += uv * rr * x.mt;
                xo[n * ROW_B + SEG_B(U + uu)] = dav[e][1];
            }
        }
        __syncthreads();
#endif
        // the partial rec of every unit from this CTA's dA columns, to the owners
        seg_product<CJ_B, KP_B, PAD_B, Q_B, ROW_B>(xo, w, q, grp, lane, part, HID);
        __syncthreads();
        push(recv, (j + 1) & 1, (j + 1) & 1);
#pragma unroll
        for (int e = 0; e < CE_B; ++e) {
            const int el = tid + e * NT_B;
            if (el < NB * U) {
                const long long nn = el / U;
                const int u = r * U + el % U;
                float* ab = dA + t * s_dat + nn * s_dan + dG + u;
#pragma unroll
                for (int g = 0; g < G; ++g) ab[rblock(g) * HID] = dav[e][g];
#if RA
                dq[t * s_dqt + nn * s_dqn + dH + u] = dqv[e];
#endif
                in[e] = in1[e];
                if (j + 2 < T) load_in(j + 2, el, in1[e]);
            }
        }
    }

    // dh0 = carry + rec of the first processed step (times its mask)
    receive(T);
    const long long t0 = step_time(0, T, d);
#pragma unroll
    for (int e = 0; e < CE_B; ++e) {
        const int el = tid + e * NT_B;
        if (el < NB * U) {
            const int n = el / U, uu = el % U, u = r * U + uu;
            float v = rec(recv, T & 1, n, uu);
#if HAS_MASK
            v *= mk[t0 * s_mt + (long long)n * s_mn + dH + u];
#endif
            dh0[(long long)n * s_dh0n + dH + u] = carry[e] + v;
        }
    }
}
