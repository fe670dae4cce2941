/* Linux only: on Apple platforms ImageIO decodes, and this target (which the package still builds there)
 * compiles to nothing, needing no libjpeg or libpng headers. */
#if defined(__linux__)

/*
 * A decoder for the 1/8 scale of baseline JPEG: one pixel per 8x8 block, from the DC coefficient
 * alone, split over two threads.
 *
 * At 1/8 scale libjpeg-turbo's whole cost is Huffman decoding, which is sequential: a block's place
 * in the stream is only known once every block before it is decoded. Huffman codes resynchronise,
 * though: a decoder started at an arbitrary byte soon falls into step with the true block
 * boundaries. So a second thread starts in the middle of the entropy-coded data and records where
 * each MCU it decodes starts; the first thread decodes from the beginning and, past the middle,
 * looks for an MCU start that the second thread also recorded. From there both decoded the same
 * MCUs, and the second thread's DC values differ from the true ones by a constant per component
 * (its DC predictors started at zero), which the first thread's predictors at that point give.
 *
 * The pixels are libjpeg-turbo's own at that scale, computed the way it computes them: a block at
 * the output's resolution is its DC, dequantized, divided by 8 and level-shifted (the 1x1 IDCT); a
 * chroma block at half the resolution both ways (4:2:0) goes through libjpeg's 2x2 IDCT, which also
 * reads a few AC coefficients, so those blocks' AC coefficients are decoded rather than skipped;
 * chroma at half the resolution one way is repeated (libjpeg upsamples without its triangle filter
 * at this scale); the colour conversion uses its fixed-point JFIF factors.
 *
 * The first thread's DC values are final as it decodes them, so its MCUs go straight out as RGBA
 * pixels. Only the second thread keeps a record per MCU (its DC values and 2x2 terms) and where
 * each MCU starts, until the first thread reaches it: about as much memory as the output for the
 * half it decodes.
 *
 * Anything this decoder does not expect (a restart interval, an invalid code, data that ends early
 * or is followed by anything but EOI or the end of the data) makes it decline, and the caller decodes with libjpeg, which
 * gives the canonical result or error. It only reads libjpeg's parsed header and the bytes.
 */

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "Decoder.h"

enum {
    /* Codes up to this long are decoded with one table look-up. */
    SYMBOL_BITS = 9,
    /* An AC code and its extra bits up to this long are skipped with one table look-up. */
    SKIP_BITS = 11,
    MAX_BLOCKS_IN_MCU = 10,
};

typedef struct {
    /* (length << 8) | symbol for codes of at most SYMBOL_BITS bits; 0 for longer ones. */
    uint16_t symbols[1 << SYMBOL_BITS];
    /* AC tables: the bits of a code and its extra bits | (coefficients they advance over << 5),
       when both fit in SKIP_BITS; 0 otherwise. */
    uint16_t skips[1 << SKIP_BITS];
    /* The largest code of each length, -1 when there is none. */
    int32_t max_code[17];
    /* values[value_offset[length] + code] is the symbol of a code of that length. */
    int32_t value_offset[17];
    uint8_t values[256];
} huffman_table;

/* Builds the tables of a canonical Huffman table; 0 when it is invalid (as libjpeg would say). */
static int build_table(huffman_table *table, const JHUFF_TBL *source, int is_dc) {
    memset(table, 0, sizeof *table);
    int count = 0;
    for (int length = 1; length <= 16; length++) {
        count += source->bits[length];
    }
    if (count > 256) {
        return 0;
    }
    memcpy(table->values, source->huffval, (size_t)count);
    int32_t code = 0;
    int index = 0;
    for (int length = 1; length <= 16; length++) {
        int codes = source->bits[length];
        table->max_code[length] = -1;
        if (codes > 0) {
            table->value_offset[length] = index - code;
        }
        // More codes than `length` bits hold: refused before any is entered, since the look-up
        // tables below are indexed by the code (libjpeg only checks the table when decoding starts).
        if (code + codes > (int32_t)1 << length) {
            return 0;
        }
        for (int n = 0; n < codes; n++, code++, index++) {
            int symbol = table->values[index];
            if (is_dc && symbol > 11) {
                return 0;  // 8-bit DC differences have at most 11 bits
            }
            if (length <= SYMBOL_BITS) {
                int first = code << (SYMBOL_BITS - length);
                for (int fill = 0; fill < 1 << (SYMBOL_BITS - length); fill++) {
                    table->symbols[first + fill] = (uint16_t)((length << 8) | symbol);
                }
            }
            if (!is_dc && length <= SKIP_BITS) {
                int run = symbol >> 4, size = symbol & 15;
                int bits = length + size;
                int advance = size != 0 ? run + 1 : (run == 15 ? 16 : 64);
                if (bits <= SKIP_BITS) {
                    int first = code << (SKIP_BITS - length);
                    for (int fill = 0; fill < 1 << (SKIP_BITS - length); fill++) {
                        table->skips[first + fill] = (uint16_t)(bits | (advance << 5));
                    }
                }
            }
        }
        if (codes > 0) {
            table->max_code[length] = code - 1;
        }
        // No code may be all ones: the next code must still fit in `length` bits.
        if (code >= (int32_t)1 << length) {
            return 0;
        }
        code <<= 1;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * Reading bits: byte stuffing removed, zeros fed after the first marker.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *data;
    size_t position;  // the next byte to load
    size_t end;
    uint64_t bits;    // the next bit is the top one
    int count;        // valid bits in `bits`
    uint64_t loaded;  // data bits loaded so far (stuffing and fed zeros left out)
    uint64_t fed;     // zero bits fed after the marker
    int at_marker;
    size_t marker;    // where the marker (or the end of the data) is, once reached
    size_t watch;     // a byte whose bit offset is wanted
    uint64_t watch_offset;
} bit_reader;

static void reader_init(bit_reader *reader, const uint8_t *data, size_t start, size_t end, size_t watch) {
    memset(reader, 0, sizeof *reader);
    reader->data = data;
    reader->position = start;
    reader->end = end;
    reader->watch = watch;
    reader->watch_offset = UINT64_MAX;
}

/* The bits consumed so far, fed zeros included: past `loaded` once a decode ran beyond the data. */
static inline uint64_t reader_offset(const bit_reader *reader) {
    return reader->loaded + reader->fed - (uint64_t)reader->count;
}

/* Loads whole bytes while none of the next eight is 0xFF; 0 when it could not. */
static inline __attribute__((always_inline)) int refill_fast(bit_reader *reader) {
    if (reader->at_marker || reader->position + 8 > reader->end) {
        return 0;
    }
    uint64_t word;
    memcpy(&word, reader->data + reader->position, 8);
    word = __builtin_bswap64(word);
    uint64_t inverted = ~word;
    if (((inverted - 0x0101010101010101ull) & ~inverted & 0x8080808080808080ull) != 0) {
        return 0;
    }
    // Take as many whole bytes as fit (count <= 56, so at least one).
    int take = (64 - reader->count) >> 3;
    uint64_t taken = take == 8 ? word : (word >> (64 - 8 * take)) << (64 - 8 * take);
    if (reader->watch - reader->position < (size_t)take) {  // unsigned: also false when watch < position
        reader->watch_offset = reader->loaded + 8 * (uint64_t)(reader->watch - reader->position);
    }
    reader->bits |= taken >> reader->count;
    reader->position += (size_t)take;
    reader->count += 8 * take;
    reader->loaded += 8 * (uint64_t)take;
    return 1;
}

static void refill_slowly(bit_reader *reader) {
    while (reader->count <= 56) {
        if (refill_fast(reader)) {
            continue;
        }
        uint64_t byte = 0;
        if (!reader->at_marker) {
            if (reader->position == reader->watch) {
                reader->watch_offset = reader->loaded;
            }
            if (reader->position >= reader->end) {
                reader->at_marker = 1;
                reader->marker = reader->end;
            } else if (reader->data[reader->position] != 0xFF) {
                byte = reader->data[reader->position];
                reader->position += 1;
            } else if (reader->position + 1 < reader->end && reader->data[reader->position + 1] == 0) {
                byte = 0xFF;  // a stuffed 0xFF
                reader->position += 2;
            } else {
                reader->at_marker = 1;
                reader->marker = reader->position;
            }
        }
        reader->bits |= byte << (56 - reader->count);
        reader->count += 8;
        if (reader->at_marker) {
            reader->fed += 8;
        } else {
            reader->loaded += 8;
        }
    }
}

/* Tops the bit buffer up to more than 56 bits. */
static inline __attribute__((always_inline)) void refill(bit_reader *reader) {
    if (!refill_fast(reader)) {
        refill_slowly(reader);
    }
}

/* The signed value of `size` extra bits `raw` (JPEG's EXTEND: a leading 0 means negative). */
static inline int32_t extend(uint32_t raw, int size) {
    return raw < (1u << (size - 1)) ? (int32_t)raw - (int32_t)((1u << size) - 1) : (int32_t)raw;
}

/* Decodes one symbol from the top bits of `bits`; 0 for an invalid code. */
static inline int decode_symbol(const huffman_table *table, uint64_t bits, int *length, int *symbol) {
    int entry = table->symbols[bits >> (64 - SYMBOL_BITS)];
    if (entry != 0) {
        *length = entry >> 8;
        *symbol = entry & 0xFF;
        return 1;
    }
    uint32_t peek = (uint32_t)(bits >> 48);
    for (int size = SYMBOL_BITS + 1; size <= 16; size++) {
        int32_t code = (int32_t)(peek >> (16 - size));
        if (code <= table->max_code[size]) {
            *length = size;
            *symbol = table->values[(table->value_offset[size] + code) & 0xFF];
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding MCUs
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int blocks;
    /* The scan component of each block of an MCU. */
    int component_of_block[MAX_BLOCKS_IN_MCU];
    huffman_table *dc[MAX_COMPS_IN_SCAN];
    huffman_table *ac[MAX_COMPS_IN_SCAN];
    int components;
    /* Per scan component: whether its blocks go through the 2x2 IDCT, with the quantizer it needs. */
    int uses_2x2[MAX_COMPS_IN_SCAN];
    const uint16_t *quantizer[MAX_COMPS_IN_SCAN];
    /* A block's four 2x2 terms start at record[ac_terms_of_block[block]]; -1 for DC-only blocks. */
    int ac_terms_of_block[MAX_BLOCKS_IN_MCU];
    /* The 16-bit values an MCU records: a DC value per block, then four terms per 2x2 block. */
    int record;
} mcu_layout;

/* The natural (row-major) position of each coefficient in zigzag order, with 16 spare entries so
   that a corrupt run past the end lands in the last position instead of outside the block. */
static const uint8_t natural_order[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};

/* libjpeg's 2x2 IDCT (jidctred.c) without the DC coefficient: for each of the four outputs the term
   Q with output = range_limit((DC * quantizer[0] + Q) >> 3), so that the DC can be added once it is
   known (the second thread learns its DC values late). This is exact: the dequantized DC d enters
   the first pass as d << 15, a multiple of that pass's rounding step, and the second as d << 17;
   with U the rest of the second pass's sum plus its rounding bias, (d * 2^17 + U) >> 20 equals
   (d + (U >> 17)) >> 3 because the dropped low 17 bits of U cannot carry into bit 20. Terms past
   16 bits saturate; for a valid image's DC the output is at the end of the range either way.

   Returns 0 when a dequantized coefficient or a first-pass value does not fit in 16 bits: libjpeg-turbo
   runs an SSE2 or NEON version of this transform instead of the C one, which works in 16 bits there,
   and the two part ways past it (see `write_mcu`), so the block is left to libjpeg. */
static int idct_2x2_terms(const int32_t *coefficients, const uint16_t *quantizer, int16_t *terms) {
    enum { C7 = -5906, C5 = 6967, C3 = -10426, C1 = 29692 };  // FIX(0.720959822) and so on, negated as libjpeg does
    static const int columns[5] = { 0, 1, 3, 5, 7 };
    int64_t rows[2][8] = { { 0 } };
    int fits = 1;
    for (int index = 0; index < 5; index++) {
        int column = columns[index];
        int64_t z[8];
        for (int row = 0; row < 8; row++) {
            z[row] = (int64_t)coefficients[row * 8 + column] * quantizer[row * 8 + column];
            fits &= z[row] >= INT16_MIN && z[row] <= INT16_MAX;
        }
        if (column == 0) {
            z[0] = 0;  // the DC, added back by the caller
        }
        int64_t odd = z[7] * C7 + z[5] * C5 + z[3] * C3 + z[1] * C1;
        int64_t even = z[0] * ((int64_t)1 << 15);
        // DESCALE(x, CONST_BITS - PASS1_BITS + 2) with libjpeg's rounding.
        rows[0][column] = (even + odd + 4096) >> 13;
        rows[1][column] = (even - odd + 4096) >> 13;
        fits &= rows[0][column] >= INT16_MIN && rows[0][column] <= INT16_MAX;
        fits &= rows[1][column] >= INT16_MIN && rows[1][column] <= INT16_MAX;
    }
    for (int row = 0; row < 2; row++) {
        const int64_t *w = rows[row];
        int64_t odd = w[7] * C7 + w[5] * C5 + w[3] * C3 + w[1] * C1;
        int64_t base = w[0] * ((int64_t)1 << 15) + ((int64_t)1 << 19);
        for (int column = 0; column < 2; column++) {
            int64_t term = (column == 0 ? base + odd : base - odd) >> 17;
            terms[row * 2 + column] = (int16_t)(term > INT16_MAX ? INT16_MAX : term < INT16_MIN ? INT16_MIN : term);
        }
    }
    return fits;
}

/* Decodes one MCU, storing each block's DC value (with `predictors`, wrapping modulo 2^16). */
static int decode_mcu(bit_reader *reader, const mcu_layout *layout, uint16_t *predictors, uint16_t *out) {
    // The bit buffer lives in locals here, so that the compiler keeps it in registers instead of
    // storing it back through `reader` after every code; it goes back to `reader` to refill.
    uint64_t bits = reader->bits;
    int count = reader->count;
#define ENSURE_BITS()                                                                                                  \
    if (count < 32) {                                                                                                  \
        reader->bits = bits;                                                                                           \
        reader->count = count;                                                                                         \
        refill(reader);                                                                                                \
        bits = reader->bits;                                                                                           \
        count = reader->count;                                                                                         \
    }
#define SKIP_BITS_OF(n) (bits <<= (n), count -= (n))
    int result = 0;
    for (int block = 0; block < layout->blocks; block++) {
        int component = layout->component_of_block[block];
        ENSURE_BITS();
        int length, size;
        if (!decode_symbol(layout->dc[component], bits, &length, &size)) {
            goto out;
        }
        SKIP_BITS_OF(length);
        int32_t difference = 0;
        if (size != 0) {
            difference = extend((uint32_t)(bits >> (64 - size)), size);
            SKIP_BITS_OF(size);
        }
        predictors[component] = (uint16_t)(predictors[component] + (uint16_t)difference);
        out[block] = predictors[component];

        const huffman_table *ac = layout->ac[component];
        if (layout->uses_2x2[component]) {
            // The 2x2 IDCT reads AC coefficients too: decode their values.
            int32_t coefficients[64] = { 0 };
            for (int k = 1; k < 64;) {
                ENSURE_BITS();
                int symbol;
                if (!decode_symbol(ac, bits, &length, &symbol)) {
                    goto out;
                }
                SKIP_BITS_OF(length);
                int run = symbol >> 4;
                size = symbol & 15;
                if (size != 0) {
                    k += run;
                    coefficients[natural_order[k]] = extend((uint32_t)(bits >> (64 - size)), size);
                    SKIP_BITS_OF(size);
                    k += 1;
                } else if (run == 15) {
                    k += 16;
                } else {
                    break;
                }
            }
            int16_t *terms = (int16_t *)(out + layout->ac_terms_of_block[block]);
            if (!idct_2x2_terms(coefficients, layout->quantizer[component], terms)) {
                // Marked, not failed here: `write_mcu` declines the file should the block be used. The second
                // thread decodes from a guessed start and meets such blocks in what it then drops; failing
                // there stopped it before it fell into step. For any 16-bit DC, one of the two sums leaves
                // -512...511.
                terms[0] = terms[2] = INT16_MAX;
                terms[1] = terms[3] = INT16_MIN;
            }
            continue;
        }
        for (int k = 1; k < 64;) {
            ENSURE_BITS();
            int entry = ac->skips[bits >> (64 - SKIP_BITS)];
            if (entry != 0) {
                SKIP_BITS_OF(entry & 31);
                k += entry >> 5;
                continue;
            }
            int symbol;
            if (!decode_symbol(ac, bits, &length, &symbol)) {
                goto out;
            }
            int run = symbol >> 4;
            size = symbol & 15;
            SKIP_BITS_OF(length + size);
            if (size != 0) {
                k += run + 1;
            } else if (run == 15) {
                k += 16;
            } else {
                break;
            }
        }
    }
    result = 1;
out:
    reader->bits = bits;
    reader->count = count;
    return result;
#undef ENSURE_BITS
#undef SKIP_BITS_OF
}

/* Decodes one MCU into `record`; 0 for an invalid code or an MCU that needed bits past the data
   (the zeros fed after it make no MCU). */
static inline int decode_within_data(bit_reader *reader, const mcu_layout *layout, uint16_t *predictors,
                                     uint16_t *record) {
    return decode_mcu(reader, layout, predictors, record) && reader_offset(reader) <= reader->loaded;
}

/* The second thread's share: MCUs decoded from the middle of the data, with where each started. */
typedef struct {
    const mcu_layout *layout;
    bit_reader reader;
    uint16_t predictors[MAX_COMPS_IN_SCAN];
    uint16_t *records;   // layout->record values per MCU
    uint32_t *starts;    // capacity + 1 offsets, in bits from the middle
    size_t capacity;
    size_t decoded;      // MCUs decoded within the data
    const cjpeg_decoder *decoder;  // for its cancel flag
    size_t mcus_across;  // the cancel flag is read once a row of MCUs
} segment;

/* Decodes MCUs until the capacity, an invalid code or the end of the data; starts[decoded] is
   where the first MCU not decoded starts. */
static void *decode_speculatively(void *argument) {
    segment *part = argument;
    while (part->decoded < part->capacity) {
        if (part->decoded % part->mcus_across == 0 && cjpeg_decoder_is_cancelled(part->decoder)) {
            // Stopped short, like data that ends: the first thread, cancelled too, does not use it.
            part->starts[part->decoded] = (uint32_t)reader_offset(&part->reader);
            return NULL;
        }
        part->starts[part->decoded] = (uint32_t)reader_offset(&part->reader);
        if (!decode_within_data(&part->reader, part->layout, part->predictors,
                                part->records + part->decoded * (size_t)part->layout->record)) {
            return NULL;
        }
        part->decoded += 1;
    }
    part->starts[part->decoded] = (uint32_t)reader_offset(&part->reader);
    return NULL;
}

/* Whether the entropy-coded data ends right after `offset` (padding only) with an EOI marker, or with the
   end of the data where that marker would be (its 0xFF or not): the scan is whole either way, as libjpeg
   decodes it. */
static int ends_cleanly(bit_reader *reader, uint64_t offset) {
    // Load on to the marker while less than a whole byte of data follows `offset`.
    while (!reader->at_marker && offset <= reader->loaded && reader->loaded - offset < 8) {
        reader->count = 0;  // only the count of bytes loaded matters from here
        reader->bits = 0;
        refill(reader);
    }
    if (!reader->at_marker || offset > reader->loaded || reader->loaded - offset >= 8) {
        return 0;
    }
    size_t position = reader->marker;
    while (position < reader->end && reader->data[position] == 0xFF) {
        position++;
    }
    if (position == reader->end) {
        return 1;
    }
    return position > reader->marker && reader->data[position] == 0xD9;
}

/* ---------------------------------------------------------------------------------------------
 * The decode
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    mcu_layout layout;
    huffman_table tables[2 * MAX_COMPS_IN_SCAN];
    /* Per scan component: the frame component and its blocks in an MCU across and down. */
    int frame_component[MAX_COMPS_IN_SCAN];
    int horizontal[MAX_COMPS_IN_SCAN];
    int vertical[MAX_COMPS_IN_SCAN];
    size_t mcus_across;
    size_t mcus_down;
    int max_horizontal;
    int max_vertical;
} scan_plan;

/* Fills `plan` when the DC decoder can take the file at the scale set; 0 otherwise. */
static int make_plan(const cjpeg_decoder *decoder, scan_plan *plan) {
    const struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    if (!decoder->has_header || decoder->has_decoded || cinfo->scale_num != 1 || cinfo->scale_denom != 8 ||
        cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 || cinfo->restart_interval != 0 ||
        cinfo->comps_in_scan != cinfo->num_components || cinfo->Ss != 0 || cinfo->Se != 63 || cinfo->Ah != 0 ||
        cinfo->Al != 0 || cinfo->src == NULL || cinfo->image_width == 0 || cinfo->image_height == 0) {
        return 0;
    }
    if (!(cinfo->jpeg_color_space == JCS_YCbCr && cinfo->num_components == 3) &&
        !(cinfo->jpeg_color_space == JCS_GRAYSCALE && cinfo->num_components == 1)) {
        return 0;
    }
    memset(plan, 0, sizeof *plan);
    int max_h = 1, max_v = 1;
    for (int index = 0; index < cinfo->num_components; index++) {
        const jpeg_component_info *component = &cinfo->comp_info[index];
        if (component->h_samp_factor < 1 || component->h_samp_factor > 4 || component->v_samp_factor < 1 ||
            component->v_samp_factor > 4) {
            return 0;
        }
        max_h = component->h_samp_factor > max_h ? component->h_samp_factor : max_h;
        max_v = component->v_samp_factor > max_v ? component->v_samp_factor : max_v;
    }
    plan->max_horizontal = max_h;
    plan->max_vertical = max_v;
    int single = cinfo->comps_in_scan == 1;
    plan->layout.components = cinfo->comps_in_scan;
    int two_by_two_blocks = 0;
    for (int index = 0; index < cinfo->comps_in_scan; index++) {
        const jpeg_component_info *component = cinfo->cur_comp_info[index];
        if (component == NULL || component->component_index < 0 ||
            component->component_index >= cinfo->num_components) {
            return 0;
        }
        int h = single ? 1 : component->h_samp_factor;
        int v = single ? 1 : component->v_samp_factor;
        // Luma must be at full resolution, chroma at full or half, so that one pixel is one luma block.
        int h_ratio = max_h / component->h_samp_factor, v_ratio = max_v / component->v_samp_factor;
        if (max_h % component->h_samp_factor != 0 || max_v % component->v_samp_factor != 0 || h_ratio > 2 ||
            v_ratio > 2 || (component->component_index == 0 && (h_ratio != 1 || v_ratio != 1))) {
            return 0;
        }
        plan->frame_component[index] = component->component_index;
        plan->horizontal[index] = h;
        plan->vertical[index] = v;
        // libjpeg scales a component at half the resolution both ways up with its 2x2 IDCT
        // (jdmaster.c picks the IDCT size so that the upsampler has nothing to do).
        plan->layout.uses_2x2[index] = !single && h_ratio == 2 && v_ratio == 2;
        for (int block = 0; block < h * v; block++) {
            if (plan->layout.blocks >= MAX_BLOCKS_IN_MCU) {
                return 0;
            }
            plan->layout.ac_terms_of_block[plan->layout.blocks] =
                plan->layout.uses_2x2[index] ? 4 * two_by_two_blocks++ : -1;
            plan->layout.component_of_block[plan->layout.blocks++] = index;
        }
        int quantizer = component->quant_tbl_no;
        if (quantizer < 0 || quantizer >= NUM_QUANT_TBLS || cinfo->quant_tbl_ptrs[quantizer] == NULL) {
            return 0;
        }
        plan->layout.quantizer[index] = cinfo->quant_tbl_ptrs[quantizer]->quantval;
        int dc = component->dc_tbl_no, ac = component->ac_tbl_no;
        if (dc < 0 || dc >= NUM_HUFF_TBLS || ac < 0 || ac >= NUM_HUFF_TBLS || cinfo->dc_huff_tbl_ptrs[dc] == NULL ||
            cinfo->ac_huff_tbl_ptrs[ac] == NULL) {
            return 0;
        }
        if (!build_table(&plan->tables[2 * index], cinfo->dc_huff_tbl_ptrs[dc], 1) ||
            !build_table(&plan->tables[2 * index + 1], cinfo->ac_huff_tbl_ptrs[ac], 0)) {
            return 0;
        }
        plan->layout.dc[index] = &plan->tables[2 * index];
        plan->layout.ac[index] = &plan->tables[2 * index + 1];
    }
    plan->layout.record = plan->layout.blocks + 4 * two_by_two_blocks;
    for (int block = 0; block < plan->layout.blocks; block++) {
        if (plan->layout.ac_terms_of_block[block] >= 0) {
            plan->layout.ac_terms_of_block[block] += plan->layout.blocks;
        }
    }
    size_t width = cinfo->image_width, height = cinfo->image_height;
    if (single) {
        plan->mcus_across = (width + 7) / 8;
        plan->mcus_down = (height + 7) / 8;
    } else {
        plan->mcus_across = (width + 8 * (size_t)max_h - 1) / (8 * (size_t)max_h);
        plan->mcus_down = (height + 8 * (size_t)max_v - 1) / (8 * (size_t)max_v);
    }
    return 1;
}

int cjpeg_decoder_can_decode_dc(const cjpeg_decoder *decoder) {
    scan_plan *plan = malloc(sizeof *plan);
    if (decoder == NULL || plan == NULL) {
        free(plan);
        return 0;
    }
    int result = make_plan(decoder, plan);
    free(plan);
    return result;
}

/* libjpeg's range limit after an IDCT: sample = table[x & 1023], which clamps x + 128 to 0...255
   for x in -512...511 and wraps beyond (as it does for absurd coefficients). */
static inline uint8_t range_limit(int32_t x) {
    int32_t index = x & 1023;
    return (uint8_t)(index < 128 ? index + 128 : index < 512 ? 255 : index < 896 ? 0 : index - 896);
}

static inline uint8_t clamp_sample(int value) {
    return (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : value);
}

/* The most 16-bit values an MCU records: a DC value per block and four terms per 2x2 block. */
enum { MAX_RECORD = 5 * MAX_BLOCKS_IN_MCU };

/* Writes the RGBA pixels of MCU `mcu` (clipped to the `width` x `height` image) from its record, with
   `shift` added to each component's DC values (modulo 2^16): the 1x1 or 2x2 IDCT per block, chroma
   repeated where it has half the resolution in one direction (as libjpeg does at this scale), then
   libjpeg's fixed-point JFIF conversion (16 fraction bits).

   Returns 0 when a 2x2 block's sample before the range limit is outside -512...511, or its dequantized
   DC outside 16 bits: libjpeg-turbo's C transform (which `range_limit` follows) wraps such a value around
   where its SSE2 and NEON ones, which it runs instead, clamp it, so the file is left to libjpeg. */
static int write_mcu(const scan_plan *plan, const uint16_t *record, size_t mcu, const uint16_t *shift,
                      unsigned char *rgba, size_t bytes_per_row, size_t width, size_t height) {
    const mcu_layout *layout = &plan->layout;
    // Each frame component's samples within the MCU, row by row, `across` to a row.
    uint8_t samples[3][4 * MAX_BLOCKS_IN_MCU];
    int across[3] = { 1, 1, 1 }, h_ratio[3] = { 1, 1, 1 }, v_ratio[3] = { 1, 1, 1 };
    int in_range = 1;
    int block = 0;
    for (int index = 0; index < layout->components; index++) {
        int component = plan->frame_component[index];
        int h = plan->horizontal[index], v = plan->vertical[index];
        int scale = layout->uses_2x2[index] ? 2 : 1;
        across[component] = h * scale;
        if (layout->components > 1) {
            h_ratio[component] = plan->max_horizontal / h / scale;
            v_ratio[component] = plan->max_vertical / v / scale;
        }
        int step = layout->quantizer[index][0];
        uint8_t *own = samples[component];
        for (int row = 0; row < v; row++) {
            for (int column = 0; column < h; column++, block++) {
                int32_t dequantized = (int32_t)(int16_t)(uint16_t)(record[block] + shift[index]) * step;
                if (scale == 2) {
                    const int16_t *terms = (const int16_t *)(record + layout->ac_terms_of_block[block]);
                    uint8_t *top = own + 2 * row * across[component] + 2 * column;
                    int32_t values[4];
                    in_range &= dequantized >= INT16_MIN && dequantized <= INT16_MAX;
                    for (int term = 0; term < 4; term++) {
                        values[term] = (dequantized + terms[term]) >> 3;
                        in_range &= values[term] >= -512 && values[term] <= 511;
                    }
                    top[0] = range_limit(values[0]);
                    top[1] = range_limit(values[1]);
                    top[across[component]] = range_limit(values[2]);
                    top[across[component] + 1] = range_limit(values[3]);
                } else {
                    // libjpeg's 1x1 IDCT: DESCALE(dequantized, 3), level-shifted.
                    own[row * across[component] + column] = range_limit((dequantized + 4) >> 3);
                }
            }
        }
    }
    // One pixel per luma block: the MCU covers the largest sampling factors' blocks.
    size_t pixels_across = layout->components > 1 ? (size_t)plan->max_horizontal : 1;
    size_t pixels_down = layout->components > 1 ? (size_t)plan->max_vertical : 1;
    size_t x0 = mcu % plan->mcus_across * pixels_across, y0 = mcu / plan->mcus_across * pixels_down;
    for (size_t y = y0; y < y0 + pixels_down && y < height; y++) {
        size_t py = y - y0;
        unsigned char *pixel = rgba + y * bytes_per_row + 4 * x0;
        for (size_t x = x0; x < x0 + pixels_across && x < width; x++, pixel += 4) {
            size_t px = x - x0;
            int luma = samples[0][py * (size_t)across[0] + px];
            if (layout->components == 1) {
                pixel[0] = pixel[1] = pixel[2] = (unsigned char)luma;
                pixel[3] = 255;
                continue;
            }
            int cb = samples[1][py / (size_t)v_ratio[1] * (size_t)across[1] + px / (size_t)h_ratio[1]] - 128;
            int cr = samples[2][py / (size_t)v_ratio[2] * (size_t)across[2] + px / (size_t)h_ratio[2]] - 128;
            pixel[0] = clamp_sample(luma + ((91881 * cr + 32768) >> 16));
            pixel[1] = clamp_sample(luma + ((-22554 * cb - 46802 * cr + 32768) >> 16));
            pixel[2] = clamp_sample(luma + ((116130 * cb + 32768) >> 16));
            pixel[3] = 255;
        }
    }
    return in_range;
}

/* Entropy-coded data shorter than this decodes on one thread: a second would not pay for itself. */
static const size_t minimum_bytes_to_split = 1 << 20;

cjpeg_status cjpeg_decoder_decode_dc_rgba(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                          size_t rgba_byte_count, int threads, int always_split) {
    if (decoder == NULL || rgba == NULL) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    scan_plan *plan = malloc(sizeof *plan);
    if (plan == NULL) {
        return CJPEG_STATUS_MEMORY_LIMIT;
    }
    cjpeg_status status = CJPEG_STATUS_DECLINED;
    uint16_t *speculative_records = NULL;
    uint32_t *starts = NULL;
    if (!make_plan(decoder, plan) || plan->layout.record > MAX_RECORD) {
        goto done;
    }
    const struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    size_t width = (cinfo->image_width + 7) / 8, height = (cinfo->image_height + 7) / 8;
    if (bytes_per_row < width * 4 || rgba_byte_count < bytes_per_row * (height - 1) + width * 4) {
        status = CJPEG_STATUS_INVALID_ARGUMENT;
        goto done;
    }
    const uint8_t *data = cinfo->src->next_input_byte;
    size_t size = cinfo->src->bytes_in_buffer;
    size_t mcus = plan->mcus_across * plan->mcus_down;
    size_t record = (size_t)plan->layout.record;

    // The second thread starts half way, on a byte that is not the zero after a stuffed 0xFF. It
    // keeps a record per MCU (its DC values are only right once the first thread reaches it), and
    // where each MCU starts in bits from the middle, which 32 bits hold below 512 MB of data.
    int split = threads > 1 && (always_split || size >= minimum_bytes_to_split) && size >= 64 &&
                size < ((size_t)1 << 29);
    size_t middle = size / 2;
    while (split && middle < size && data[middle - 1] == 0xFF) {
        middle++;
    }
    split = split && middle < size;
    segment second;
    memset(&second, 0, sizeof second);
    pthread_t thread;
    if (split) {
        // Pages are only touched as MCUs are decoded: about half of each array.
        speculative_records = malloc(mcus * record * sizeof *speculative_records);
        starts = malloc((mcus + 1) * sizeof *starts);
        second.layout = &plan->layout;
        second.records = speculative_records;
        second.starts = starts;
        second.capacity = mcus;
        second.decoder = decoder;
        second.mcus_across = plan->mcus_across;
        reader_init(&second.reader, data, middle, size, SIZE_MAX);
        split = speculative_records != NULL && starts != NULL &&
                pthread_create(&thread, NULL, decode_speculatively, &second) == 0;
    }

    bit_reader reader;
    reader_init(&reader, data, 0, size, split ? middle : SIZE_MAX);
    uint16_t predictors[MAX_COMPS_IN_SCAN] = { 0 };
    int running = split;        // the second thread, until joined
    int failed = 0;
    int cancelled = 0;
    size_t own = mcus;          // MCUs decoded here; the second thread's follow
    size_t borrowed_from = 0;   // the second thread's first MCU in step
    size_t next = 0;            // its first MCU that may still be
    uint16_t shift[MAX_COMPS_IN_SCAN] = { 0 };
    static const uint16_t no_shift[MAX_COMPS_IN_SCAN] = { 0 };
    uint16_t own_record[MAX_RECORD];
    bit_reader *final_reader = &reader;
    uint64_t final_offset = 0;
    for (size_t mcu = 0; mcu < mcus; mcu++) {
        if (mcu % plan->mcus_across == 0 && cjpeg_decoder_is_cancelled(decoder)) {
            cancelled = 1;
            break;
        }
        uint64_t offset = reader_offset(&reader);
        if (split && reader.watch_offset != UINT64_MAX && offset >= reader.watch_offset) {
            // Past the middle: did the second thread start an MCU right here?
            if (running) {
                pthread_join(thread, NULL);
                running = 0;
            }
            uint64_t relative = offset - reader.watch_offset;
            while (next < second.decoded && starts[next] < relative) {
                next++;
            }
            if (next < second.decoded && starts[next] == relative && second.decoded - next >= mcus - mcu) {
                // In step from here. Its DC values are off by the difference of the predictors (its
                // own started at zero), the same for every block of a component; the last block of
                // each component in its MCU before sets its predictor.
                for (int component = 0; component < plan->layout.components; component++) {
                    shift[component] = predictors[component];
                }
                for (int block = 0; next > 0 && block < plan->layout.blocks; block++) {
                    int component = plan->layout.component_of_block[block];
                    shift[component] = (uint16_t)(predictors[component] - speculative_records[(next - 1) * record + (size_t)block]);
                }
                own = mcu;
                borrowed_from = next;
                final_reader = &second.reader;
                final_offset = starts[next + (mcus - mcu)];
                break;
            }
        }
        // This thread's DC values are final as decoded: its pixels go straight out. (If the decode
        // fails later, the caller discards them.)
        if (!decode_within_data(&reader, &plan->layout, predictors, own_record) ||
            !write_mcu(plan, own_record, mcu, no_shift, rgba, bytes_per_row, width, height)) {
            failed = 1;
            break;
        }
    }
    if (running) {
        pthread_join(thread, NULL);
    }
    if (cancelled) {
        status = CJPEG_STATUS_CANCELLED;
        goto done;
    }
    if (final_reader == &reader) {
        final_offset = reader_offset(&reader);
    }
    if (failed || !ends_cleanly(final_reader, final_offset)) {
        goto done;
    }

    for (size_t mcu = own; mcu < mcus; mcu++) {
        if (!write_mcu(plan, speculative_records + (borrowed_from + mcu - own) * record, mcu, shift, rgba,
                       bytes_per_row, width, height)) {
            goto done;
        }
    }
    status = CJPEG_STATUS_OK;

done:
    free(speculative_records);
    free(starts);
    free(plan);
    return status;
}

#endif /* defined(__linux__) */
