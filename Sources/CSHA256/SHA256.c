/* SHA-256 (FIPS 180-4) for naming cache files after their URL: portable rounds, and on x86-64 the
 * SHA extensions (SHA-NI) when the processor has them, chosen once at run time. Not used for
 * anything security-related. */

#include "CSHA256.h"

#include <string.h>

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t initial_state[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* Mixes `blocks` consecutive 64-byte blocks into `state`. */
typedef void (*compress_function)(uint32_t state[8], const uint8_t *data, size_t blocks);

static inline uint32_t rotate_right(uint32_t value, unsigned count) {
    return (value >> count) | (value << (32 - count));
}

static void compress_portable(uint32_t state[8], const uint8_t *data, size_t blocks) {
    uint32_t schedule[64];
    for (; blocks > 0; blocks--, data += 64) {
        for (int word = 0; word < 16; word++) {
            const uint8_t *p = data + word * 4;
            schedule[word] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        }
        for (int word = 16; word < 64; word++) {
            uint32_t early = schedule[word - 15], late = schedule[word - 2];
            uint32_t s0 = rotate_right(early, 7) ^ rotate_right(early, 18) ^ (early >> 3);
            uint32_t s1 = rotate_right(late, 17) ^ rotate_right(late, 19) ^ (late >> 10);
            schedule[word] = schedule[word - 16] + s0 + schedule[word - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int round = 0; round < 64; round++) {
            uint32_t sum1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
            uint32_t choice = (e & f) ^ (~e & g);
            uint32_t temp1 = h + sum1 + choice + round_constants[round] + schedule[round];
            uint32_t sum0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
            uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
            h = g;
            g = f;
            f = e;
            e = d + temp1;
            d = c;
            c = b;
            b = a;
            a = temp1 + sum0 + majority;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* The SHA extensions work on the state as two registers, ABEF and CDGH (A in the highest lane), and
 * on four message words at a time: each group of four rounds is two `sha256rnds2`, and each group's
 * words past the first sixteen come from `sha256msg1` (the sigma-0 half), an alignment for the
 * word seven back, and `sha256msg2` (the sigma-1 half). */
SHA_TARGET static void compress_sha_ni(uint32_t state[8], const uint8_t *data, size_t blocks) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks > 0; blocks--, data += 64) {
        const __m128i abef_before = abef, cdgh_before = cdgh;
        __m128i words[4];
        for (int group = 0; group < 16; group++) {
            __m128i *current = &words[group % 4];
            if (group < 4) {
                *current = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + group * 16)), byte_swap);
            } else {
                const __m128i back1 = words[(group + 3) % 4], back2 = words[(group + 2) % 4];
                __m128i next = _mm_sha256msg1_epu32(*current, words[(group + 1) % 4]);
                next = _mm_add_epi32(next, _mm_alignr_epi8(back1, back2, 4));
                *current = _mm_sha256msg2_epu32(next, back1);
            }
            __m128i message =
                _mm_add_epi32(*current, _mm_loadu_si128((const __m128i *)&round_constants[group * 4]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, message);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(message, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}

static int has_sha_extensions(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    const int ssse3 = (ecx >> 9) & 1, sse41 = (ecx >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    return ssse3 && sse41 && ((ebx >> 29) & 1);
}
#else
static int has_sha_extensions(void) { return 0; }
#endif

/* -1 until asked; then 1 with the SHA extensions, 0 without, read and written atomically. cpuid can trap to a hypervisor, so it
 * runs once. */
static int accelerated = -1;

int csha256_is_accelerated(void) {
    int known = __atomic_load_n(&accelerated, __ATOMIC_RELAXED);
    if (known < 0) {
        known = has_sha_extensions();
        __atomic_store_n(&accelerated, known, __ATOMIC_RELAXED);
    }
    return known;
}

/* Whole blocks straight from the bytes, then the padded tail (one or two blocks) from the stack. */
static void hash_with(compress_function compress, const uint8_t *bytes, size_t count, uint32_t state[8]) {
    memcpy(state, initial_state, sizeof initial_state);
    const size_t whole = count / 64;
    if (whole > 0) compress(state, bytes, whole);
    uint8_t tail[128] = {0};
    const size_t remainder = count - whole * 64;
    if (remainder > 0) memcpy(tail, bytes + whole * 64, remainder);
    tail[remainder] = 0x80;
    const size_t tail_length = remainder < 56 ? 64 : 128;
    const uint64_t bit_length = (uint64_t)count * 8;
    for (int index = 0; index < 8; index++) tail[tail_length - 1 - index] = (uint8_t)(bit_length >> (index * 8));
    compress(state, tail, tail_length / 64);
}

void csha256_hash_portable(const uint8_t *bytes, size_t count, uint32_t state[8]) {
    hash_with(compress_portable, bytes, count, state);
}

void csha256_hash(const uint8_t *bytes, size_t count, uint32_t state[8]) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    if (csha256_is_accelerated()) {
        hash_with(compress_sha_ni, bytes, count, state);
        return;
    }
#endif
    hash_with(compress_portable, bytes, count, state);
}
