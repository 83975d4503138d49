// Shared device code of the thread-block-cluster RNN kernels (lstm_cluster.cu, gru_cluster.cu;
// kernels/lstm_cluster.py documents the design): the cluster barrier, mbarriers, st.async
// pushes into another CTA's shared memory, the activations, the step order and the per-step
// product `seg_product`. The macros NB NP KP_F PAD_F Q_F NT_F KP_B PAD_B Q_B NT_B U REV BIDIR
// are the including kernel's #defines (written before this text by the host side).

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// the hardware cluster barrier, in two halves: arrive (release: this CTA's shared-memory
// writes before it are visible to the cluster after the wait) and wait (acquire); used once,
// after the setup (every CTA started, buffers zeroed, mbarriers initialised)
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// the address in the shared memory of CTA `rank` of the cluster that `a` has in this CTA's
__device__ __forceinline__ unsigned cluster_addr(unsigned a, unsigned rank) {
    unsigned ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    return ra;
}

// mbarriers: one per receiving buffer, arrival count 1 (the local expect_tx), completed by the
// bytes that the cluster's st.async stores deliver
__device__ __forceinline__ void mbar_init(unsigned long long* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    const unsigned a = smem_addr(bar);
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(a), "r"(parity) : "memory");
    }
}

// a 16-byte store into the shared memory of CTA `rank` (at the offset `local` has here) that
// completes 16 bytes of the transaction on that CTA's mbarrier at the offset of `bar`
__device__ __forceinline__ void st_async4(float* local, unsigned long long* bar, unsigned rank,
                                          float4 v) {
    const unsigned a = cluster_addr(smem_addr(local), rank);
    const unsigned b = cluster_addr(smem_addr(bar), rank);
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, "
        "[%5];" ::"r"(a), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(b) : "memory");
}

template <int KIND> __device__ __forceinline__ float act(float x) {
    if (KIND == 1) return x < 0.0f ? 0.0f : x;  // (not fmaxf, which drops a NaN)
    if (KIND == 2) {
        float e = __expf(-2.0f * fabsf(x));
        float t = __fdividef(1.0f - e, 1.0f + e);
        return x < 0.0f ? -t : t;
    }
    if (KIND == 3) return __fdividef(1.0f, 1.0f + __expf(-x));
    if (KIND == 4) {
        const float h = 0.2f * x + 0.5f;
        return h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
    }
    return x;
}

// f'(a) from y = f(a); NaN propagates
template <int KIND> __device__ __forceinline__ float dact(float y) {
    if (KIND == 1) return y != y ? y : (y > 0.0f ? 1.0f : 0.0f);
    if (KIND == 2) return 1.0f - y * y;
    if (KIND == 3) return y * (1.0f - y);
    if (KIND == 4) return y != y ? y : ((y > 0.0f && y < 1.0f) ? 0.2f : 0.0f);
    return y * 0.0f + 1.0f;
}

// time index of the k-th processed step of direction d
__device__ __forceinline__ long long step_time(int k, int T, int d) {
#if BIDIR
    return d == 0 ? k : T - 1 - k;
#elif REV
    return T - 1 - k;
#else
    return k;
#endif
}

// Sum over the Q consecutive lanes of a group (Q a power of two dividing 32) of V values per
// lane, reduce-scatter style: each halving step trades half of the values with the partner
// lane. Afterwards v[0 .. max(V / Q, 1)) hold the sums of the values v[off ..] (returned).
template <int V, int Q> __device__ __forceinline__ int group_reduce(float* v, int lane) {
    int off = 0;
    int cnt = V;
#pragma unroll
    for (int s = Q / 2; s >= 1; s >>= 1) {
        if (cnt > 1) {
            const int half = cnt / 2;
            const bool up = (lane & s) != 0;
#pragma unroll
            for (int i = 0; i < V / 2; ++i) {
                if (i < half) {
                    float send = up ? v[i] : v[i + half];
                    float keep = up ? v[i + half] : v[i];
                    v[i] = keep + __shfl_xor_sync(FULL_MASK, send, s);
                }
            }
            if (up) off += half;
            cnt = half;
        } else {
            v[0] += __shfl_xor_sync(FULL_MASK, v[0], s);
        }
    }
    return off;
}

// segment layout of a gathered operand row: K split in segments of KP floats (one per lane
// of a group), each padded by PAD floats against bank conflicts
#define SEG_F(k) (((k) / KP_F) * (KP_F + PAD_F) + (k) % KP_F)
#define ROW_F (Q_F * (KP_F + PAD_F))
#define SEG_B(k) (((k) / KP_B) * (KP_B + PAD_B) + (k) % KP_B)
#define ROW_B (Q_B * (KP_B + PAD_B))  // Q_B * KP_B = 4U: the backward's own dA columns
#define CE_F ((NB * U + NT_F - 1) / NT_F)  // gate elements (row, unit) per thread
#define CE_B ((NB * U + NT_B - 1) / NT_B)

// The per-step product of both kernels: out[n * ld + grp * CJ + cj] (rows n < NB) = the sum
// over the Q lanes of this thread's group of x[n][its K segment] . w[.][cj]; x holds NP rows
// of ROW floats in segments of KP (+ PAD) floats, w this thread's [KP][CJ] part of R.
template <int CJ, int KP, int PAD, int Q, int ROW>
__device__ __forceinline__ void seg_product(const float* x, const float (&w)[KP][CJ], int q,
                                            int grp, int lane, float* out, int ld) {
    float acc[NP * CJ];
#pragma unroll
    for (int i = 0; i < NP * CJ; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int n = 0; n < NP; ++n) {
#pragma unroll
        for (int k4 = 0; k4 < KP; k4 += 4) {
            const float4 h = *reinterpret_cast<const float4*>(x + n * ROW + q * (KP + PAD) + k4);
#pragma unroll
            for (int cj = 0; cj < CJ; ++cj) {
                float a = acc[n * CJ + cj];
                a = fmaf(h.x, w[k4][cj], a);
                a = fmaf(h.y, w[k4 + 1][cj], a);
                a = fmaf(h.z, w[k4 + 2][cj], a);
                a = fmaf(h.w, w[k4 + 3][cj], a);
                acc[n * CJ + cj] = a;
            }
        }
    }
    const int off = group_reduce<NP * CJ, Q>(acc, lane);
    constexpr int KEEP = NP * CJ / Q > 0 ? NP * CJ / Q : 1;
#pragma unroll
    for (int i = 0; i < KEEP; ++i) {
        const int idx = off + i, n = idx / CJ;
        if (n < NB) out[n * ld + grp * CJ + idx % CJ] = acc[i];
    }
}

