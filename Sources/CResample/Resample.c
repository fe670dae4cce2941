// Fixed-point resampling of 8-bit RGBA, the two passes of a separable filter.
//
// Every weight is an int16 with `precision` fractional bits and each target sample's weights sum to
// exactly 1 << precision, so flat areas stay exact and an opaque image stays opaque. A sum is an
// int32: products of a byte and a weight, plus half a unit, shifted down and clamped to a byte. The
// plain C, SSE2 and AVX2 kernels compute the same sums in the same integers, so every level gives
// the same bytes (the tests compare them).

#include "CResample.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CRESAMPLE_X86 1
#endif

struct cresample_axis {
    int target_count;
    /// The taps of the caller's windows, which the column pass keeps (the caller hands it their rows).
    int taps;
    /// The row pass reads whole groups of four taps: `taps` rounded up, or `taps` itself when the
    /// source is too short for that (the row pass then runs in plain C).
    int row_taps;
    int precision;
    int16_t *weights;
    int32_t *row_starts;
    int16_t *row_weights;
};

// MARK: - Levels

static _Atomic int detected_level = -1;
static _Atomic int level_cap = 2;

static int detect_level(void) {
#if CRESAMPLE_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 2 : 1;
#else
    return 0;
#endif
}

static int available_level(void) {
    int level = atomic_load_explicit(&detected_level, memory_order_relaxed);
    if (level < 0) {
        level = detect_level();
        atomic_store_explicit(&detected_level, level, memory_order_relaxed);
    }
    return level;
}

int cresample_has_vector_kernels(void) { return available_level() > 0; }

int cresample_level(void) {
    int level = available_level();
    int cap = atomic_load_explicit(&level_cap, memory_order_relaxed);
    return level < cap ? level : cap;
}

int cresample_set_level(int level) {
    atomic_store_explicit(&level_cap, level < 0 ? 0 : level, memory_order_relaxed);
    return cresample_level();
}

// MARK: - Weights

/// The most fractional bits for which every weight fits an int16 (with room for the rounding fix-up)
/// and every sum of bytes times weights fits an int32.
static int choose_precision(const float *weights, int target_count, int taps) {
    double largest = 0, largest_sum = 0;
    for (int target = 0; target < target_count; target++) {
        double sum = 0;
        for (int tap = 0; tap < taps; tap++) {
            double weight = fabs((double)weights[target * taps + tap]);
            sum += weight;
            if (weight > largest) largest = weight;
        }
        if (sum > largest_sum) largest_sum = sum;
    }
    int precision = 22;
    while (precision > 1 && (largest * (double)(1 << precision) > 30000.0 ||
                             (largest_sum * 255.0 + 1.0) * (double)(1 << precision) > 2.0e9)) {
        precision--;
    }
    return precision;
}

/// Rounds one sample's weights to fixed point and gives the rounding error to its largest weight,
/// so they sum to exactly one. Returns 0 if that weight would leave the int16 range.
static int quantize(const float *weights, int taps, int precision, int16_t *out) {
    double unit = (double)(1 << precision);
    long total = 0;
    int largest = 0;
    for (int tap = 0; tap < taps; tap++) {
        long value = lrint((double)weights[tap] * unit);
        out[tap] = (int16_t)value;
        total += value;
        if (fabs((double)weights[tap]) > fabs((double)weights[largest])) largest = tap;
    }
    long fixed = (long)out[largest] + ((1L << precision) - total);
    if (fixed > INT16_MAX || fixed < INT16_MIN) return 0;
    out[largest] = (int16_t)fixed;
    return 1;
}

void cresample_axis_destroy(cresample_axis *axis) {
    if (!axis) return;
    free(axis->weights);
    free(axis->row_starts);
    free(axis->row_weights);
    free(axis);
}

cresample_axis *cresample_axis_create(int source_count, int target_count, int taps, const int32_t *starts,
                                      const float *weights) {
    if (source_count < 1 || target_count < 1 || taps < 1 || taps > source_count) return NULL;
    for (int target = 0; target < target_count; target++) {
        if (starts[target] < 0 || starts[target] > source_count - taps) return NULL;
    }
    cresample_axis *axis = calloc(1, sizeof *axis);
    if (!axis) return NULL;
    axis->target_count = target_count;
    axis->taps = taps;
    axis->row_taps = (taps + 3) / 4 * 4 <= source_count ? (taps + 3) / 4 * 4 : taps;
    axis->precision = choose_precision(weights, target_count, taps);
    size_t count = (size_t)target_count;
    axis->weights = malloc(count * (size_t)taps * sizeof(int16_t));
    axis->row_starts = malloc(count * sizeof(int32_t));
    axis->row_weights = calloc(count * (size_t)axis->row_taps, sizeof(int16_t));
    if (!axis->weights || !axis->row_starts || !axis->row_weights) {
        cresample_axis_destroy(axis);
        return NULL;
    }
    for (int target = 0; target < target_count; target++) {
        int16_t *own = axis->weights + (size_t)target * (size_t)taps;
        if (!quantize(weights + (size_t)target * (size_t)taps, taps, axis->precision, own)) {
            cresample_axis_destroy(axis);
            return NULL;
        }
        // The row pass's wider window must stay inside the row: near the right edge it starts
        // earlier, and the weights move right within it; the extra taps weigh zero.
        int start = starts[target];
        int row_start = start < source_count - axis->row_taps ? start : source_count - axis->row_taps;
        axis->row_starts[target] = row_start;
        memcpy(axis->row_weights + (size_t)target * (size_t)axis->row_taps + (start - row_start), own,
               (size_t)taps * sizeof(int16_t));
    }
    return axis;
}

static inline uint8_t clamp_byte(int32_t sum, int precision) {
    int32_t value = (sum + (1 << (precision - 1))) >> precision;
    return (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : value);
}

// MARK: - Rows

static void row_plain(const cresample_axis *axis, const uint8_t *source, uint8_t *target) {
    int taps = axis->row_taps;
    for (int x = 0; x < axis->target_count; x++) {
        const uint8_t *pixel = source + 4 * (size_t)axis->row_starts[x];
        const int16_t *weight = axis->row_weights + (size_t)x * (size_t)taps;
        int32_t sums[4] = {0, 0, 0, 0};
        for (int tap = 0; tap < taps; tap++) {
            for (int channel = 0; channel < 4; channel++) sums[channel] += pixel[4 * tap + channel] * weight[tap];
        }
        for (int channel = 0; channel < 4; channel++) target[4 * x + channel] = clamp_byte(sums[channel], axis->precision);
    }
}

#if CRESAMPLE_X86
static inline uint32_t pack_pixel(__m128i sums, __m128i half, int precision) {
    sums = _mm_srai_epi32(_mm_add_epi32(sums, half), precision);
    sums = _mm_packs_epi32(sums, sums);
    return (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(sums, sums));
}

static inline int32_t weight_pair(const int16_t *weights) {
    int32_t pair;
    memcpy(&pair, weights, sizeof pair);
    return pair;
}

static void row_sse2(const cresample_axis *axis, const uint8_t *source, uint8_t *target) {
    int taps = axis->row_taps;
    __m128i zero = _mm_setzero_si128();
    __m128i half = _mm_set1_epi32(1 << (axis->precision - 1));
    for (int x = 0; x < axis->target_count; x++) {
        const uint8_t *pixel = source + 4 * (size_t)axis->row_starts[x];
        const int16_t *weight = axis->row_weights + (size_t)x * (size_t)taps;
        __m128i sums = zero;
        for (int tap = 0; tap < taps; tap += 2) {
            // Two pixels as int16, then their channels side by side: r0 r1 g0 g1 b0 b1 a0 a1, so one
            // multiply-add of pairs weighs both taps of every channel.
            __m128i wide = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(pixel + 4 * tap)), zero);
            __m128i paired = _mm_unpacklo_epi16(wide, _mm_unpackhi_epi64(wide, wide));
            sums = _mm_add_epi32(sums, _mm_madd_epi16(paired, _mm_set1_epi32(weight_pair(weight + tap))));
        }
        uint32_t packed = pack_pixel(sums, half, axis->precision);
        memcpy(target + 4 * x, &packed, 4);
    }
}

__attribute__((target("avx2"))) static void row_avx2(const cresample_axis *axis, const uint8_t *source,
                                                      uint8_t *target) {
    int taps = axis->row_taps;
    __m128i half = _mm_set1_epi32(1 << (axis->precision - 1));
    // Within each 128-bit half, the two pixels' int16 channels side by side: r0 r1 g0 g1 b0 b1 a0 a1.
    __m256i pairing = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8, 9, 2, 3, 10,
                                       11, 4, 5, 12, 13, 6, 7, 14, 15);
    // Weight pairs (w0, w1) for the low half, (w2, w3) for the high half.
    __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    for (int x = 0; x < axis->target_count; x++) {
        const uint8_t *pixel = source + 4 * (size_t)axis->row_starts[x];
        const int16_t *weight = axis->row_weights + (size_t)x * (size_t)taps;
        __m256i sums = _mm256_setzero_si256();
        for (int tap = 0; tap < taps; tap += 4) {
            __m256i wide = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(pixel + 4 * tap)));
            __m256i paired = _mm256_shuffle_epi8(wide, pairing);
            __m256i weights = _mm256_permutevar8x32_epi32(
                _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(weight + tap))), spread);
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(paired, weights));
        }
        __m128i both = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        uint32_t packed = pack_pixel(both, half, axis->precision);
        memcpy(target + 4 * x, &packed, 4);
    }
}
#endif

void cresample_row(const cresample_axis *axis, const uint8_t *source, uint8_t *target) {
#if CRESAMPLE_X86
    // The vector kernels read groups of four taps; an axis whose source is shorter than that has none.
    if (axis->row_taps % 4 == 0) {
        switch (cresample_level()) {
        case 2: row_avx2(axis, source, target); return;
        case 1: row_sse2(axis, source, target); return;
        default: break;
        }
    }
#endif
    row_plain(axis, source, target);
}

// MARK: - Columns

static void column_plain(const cresample_axis *axis, const int16_t *weight, const uint8_t *const *rows,
                         uint8_t *target, size_t from, size_t to) {
    for (size_t index = from; index < to; index++) {
        int32_t sum = 0;
        for (int tap = 0; tap < axis->taps; tap++) sum += rows[tap][index] * weight[tap];
        target[index] = clamp_byte(sum, axis->precision);
    }
}

#if CRESAMPLE_X86
static size_t column_sse2(const cresample_axis *axis, const int16_t *weight, const uint8_t *const *rows,
                          uint8_t *target, size_t count) {
    int taps = axis->taps;
    __m128i zero = _mm_setzero_si128();
    __m128i half = _mm_set1_epi32(1 << (axis->precision - 1));
    size_t index = 0;
    for (; index + 8 <= count; index += 8) {
        __m128i low = zero, high = zero;
        int tap = 0;
        for (; tap + 2 <= taps; tap += 2) {
            __m128i above = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(rows[tap] + index)), zero);
            __m128i below = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(rows[tap + 1] + index)), zero);
            __m128i pair = _mm_set1_epi32(weight_pair(weight + tap));
            low = _mm_add_epi32(low, _mm_madd_epi16(_mm_unpacklo_epi16(above, below), pair));
            high = _mm_add_epi32(high, _mm_madd_epi16(_mm_unpackhi_epi16(above, below), pair));
        }
        if (tap < taps) {
            __m128i last = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(rows[tap] + index)), zero);
            __m128i pair = _mm_set1_epi32((int32_t)(uint16_t)weight[tap]);
            low = _mm_add_epi32(low, _mm_madd_epi16(_mm_unpacklo_epi16(last, zero), pair));
            high = _mm_add_epi32(high, _mm_madd_epi16(_mm_unpackhi_epi16(last, zero), pair));
        }
        low = _mm_srai_epi32(_mm_add_epi32(low, half), axis->precision);
        high = _mm_srai_epi32(_mm_add_epi32(high, half), axis->precision);
        __m128i words = _mm_packs_epi32(low, high);
        _mm_storel_epi64((__m128i *)(target + index), _mm_packus_epi16(words, words));
    }
    return index;
}

__attribute__((target("avx2"))) static size_t column_avx2(const cresample_axis *axis, const int16_t *weight,
                                                           const uint8_t *const *rows, uint8_t *target,
                                                           size_t count) {
    int taps = axis->taps;
    __m256i zero = _mm256_setzero_si256();
    __m256i half = _mm256_set1_epi32(1 << (axis->precision - 1));
    size_t index = 0;
    for (; index + 16 <= count; index += 16) {
        // Sixteen bytes as int16 (eight per 128-bit half); interleaving two rows pairs each byte
        // with the one below it for a multiply-add of pairs. Packing undoes the halves' split.
        __m256i low = zero, high = zero;
        int tap = 0;
        for (; tap + 2 <= taps; tap += 2) {
            __m256i above = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[tap] + index)));
            __m256i below = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[tap + 1] + index)));
            __m256i pair = _mm256_set1_epi32(weight_pair(weight + tap));
            low = _mm256_add_epi32(low, _mm256_madd_epi16(_mm256_unpacklo_epi16(above, below), pair));
            high = _mm256_add_epi32(high, _mm256_madd_epi16(_mm256_unpackhi_epi16(above, below), pair));
        }
        if (tap < taps) {
            __m256i last = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[tap] + index)));
            __m256i pair = _mm256_set1_epi32((int32_t)(uint16_t)weight[tap]);
            low = _mm256_add_epi32(low, _mm256_madd_epi16(_mm256_unpacklo_epi16(last, zero), pair));
            high = _mm256_add_epi32(high, _mm256_madd_epi16(_mm256_unpackhi_epi16(last, zero), pair));
        }
        low = _mm256_srai_epi32(_mm256_add_epi32(low, half), axis->precision);
        high = _mm256_srai_epi32(_mm256_add_epi32(high, half), axis->precision);
        __m256i words = _mm256_packs_epi32(low, high);
        __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
        _mm_storeu_si128((__m128i *)(target + index), bytes);
    }
    return index;
}
#endif

void cresample_column(const cresample_axis *axis, int y, const uint8_t *const *rows, uint8_t *target, int width) {
    const int16_t *weight = axis->weights + (size_t)y * (size_t)axis->taps;
    size_t count = 4 * (size_t)width;
    size_t done = 0;
#if CRESAMPLE_X86
    switch (cresample_level()) {
    case 2: done = column_avx2(axis, weight, rows, target, count); break;
    case 1: done = column_sse2(axis, weight, rows, target, count); break;
    default: break;
    }
#endif
    column_plain(axis, weight, rows, target, done, count);
}
