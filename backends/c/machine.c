/* lbgen bench: machine-limit micro-kernels (copy bandwidth, FMA peak); compiled by lbgen.machine. */
#include <stddef.h>
#include <omp.h>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

int bench_set_threads(int n)
{
    if (n > 0) omp_set_num_threads(n);
    int t = 1;
    #pragma omp parallel
    {
        #pragma omp single
        t = omp_get_num_threads();
    }
    return t;
}

int bench_vector_bits(void)
{
#if defined(__AVX512F__)
    return 512;
#elif defined(__AVX__)
    return 256;
#else
    return 0;
#endif
}

/* dst[i*stride + j] = src[i*stride + j], j < n, for `streams` arrays of n doubles spaced
   `stride` apart (n and stride multiples of 8, both buffers 64-byte aligned): per block of 8
   sites every stream is read and written, like a propagate over Q population arrays (Q = the
   `streams` argument).  The caller chooses a stride that is no multiple of 4 KiB
   (lbgen.perf.machine.stream_stride): streams a power of two apart fall into the same cache
   sets and write-combining slots, which on some CPUs cuts the streaming copy to a fifth. */
void bench_copy(const double *restrict src, double *restrict dst, ptrdiff_t n, ptrdiff_t stride, int streams,
                int streaming, int prefetch)
{
    #pragma omp parallel
    {
        const ptrdiff_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const ptrdiff_t nv = n / 8;
        const ptrdiff_t lo = nv * t / nt * 8, hi = nv * (t + 1) / nt * 8;
        if (streaming) {
            for (ptrdiff_t j = lo; j < hi; j += 8)
                for (int i = 0; i < streams; ++i) {
                    const double *s = src + i * stride + j;
                    double *d = dst + i * stride + j;
                    if (prefetch) __builtin_prefetch(s + 8 * prefetch, 0, 0);   /* like the kernels do */
#if defined(__AVX512F__)
                    _mm512_stream_pd(d, _mm512_load_pd(s));
#elif defined(__AVX__)
                    _mm256_stream_pd(d, _mm256_load_pd(s));
                    _mm256_stream_pd(d + 4, _mm256_load_pd(s + 4));
#else
                    for (int k = 0; k < 8; ++k) d[k] = s[k];
#endif
                }
#if defined(__AVX512F__) || defined(__AVX__)
            _mm_sfence();
#endif
        } else {
            for (ptrdiff_t j = lo; j < hi; j += 8)
                for (int i = 0; i < streams; ++i) {
                    const double *s = src + i * stride + j;
                    double *d = dst + i * stride + j;
                    if (prefetch) __builtin_prefetch(s + 8 * prefetch, 0, 0);
#if defined(__AVX512F__)
                    _mm512_store_pd(d, _mm512_load_pd(s));
#elif defined(__AVX__)
                    _mm256_store_pd(d, _mm256_load_pd(s));
                    _mm256_store_pd(d + 4, _mm256_load_pd(s + 4));
#else
                    for (int k = 0; k < 8; ++k) d[k] = s[k];
#endif
                }
        }
    }
}

#if defined(__AVX512F__)
#define VBYTES 64
#define CHAINS 16
#define FOR_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#else
#define VBYTES 32
#define CHAINS 12
#define FOR_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif
typedef double vd __attribute__((vector_size(VBYTES)));
typedef float vf __attribute__((vector_size(VBYTES)));

/* `iters` rounds of CHAINS independent a = a*b + c on full vectors in every thread;
   *flops = total flops (2 per lane per FMA).  Returns a sum so nothing is optimised away.
   Each chain is its own variable, pinned in a vector register by an empty asm: an array of
   chains with a "memory" clobber went through the stack, a store and a reload per FMA, and
   measured store forwarding (4.7 against this 1-thread figure on an AVX-512 Xeon), not the FMA units. */
#define PEAK_DECLARE(k) PV a##k = (PV){0} + (PT)(1.0 + 0.01 * k + omp_get_thread_num());
#define PEAK_FMA(k) a##k = a##k * b + c; __asm__ volatile("" : "+v"(a##k));
#define PEAK_SUM(k) s += a##k;
#define PEAK_BODY(V, T)                                                            \
    double sink = 0.0;                                                             \
    int threads = 1;                                                               \
    _Pragma("omp parallel reduction(+:sink)")                                      \
    {                                                                              \
        _Pragma("omp single")                                                      \
        threads = omp_get_num_threads();                                           \
        typedef V PV;                                                              \
        typedef T PT;                                                              \
        PV b = (PV){0} + (PT)0.99999, c = (PV){0} + (PT)1e-5;                      \
        FOR_CHAINS(PEAK_DECLARE)                                                   \
        for (long it = 0; it < iters; ++it) {                                      \
            FOR_CHAINS(PEAK_FMA)                                                   \
        }                                                                          \
        PV s = (PV){0};                                                            \
        FOR_CHAINS(PEAK_SUM)                                                       \
        for (int l = 0; l < (int)(VBYTES / sizeof(T)); ++l) sink += s[l];          \
    }                                                                              \
    *flops = 2.0 * (double)iters * CHAINS * (VBYTES / sizeof(T)) * threads;        \
    return sink;

double bench_peak_double(long iters, double *flops) { PEAK_BODY(vd, double) }
double bench_peak_single(long iters, double *flops) { PEAK_BODY(vf, float) }
