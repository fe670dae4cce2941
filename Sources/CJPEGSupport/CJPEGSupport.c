/* Linux only: on Apple platforms ImageIO decodes, and this target (which the package still builds there)
 * compiles to nothing, needing no libjpeg or libpng headers. */
#if defined(__linux__)

#include "CJPEGSupport.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>

#include "Decoder.h"

/* ---------------------------------------------------------------------------------------------
 * The error manager: fatal errors longjmp back to the wrapper call, warnings are recorded, and
 * nothing is ever printed or exit()ed.
 * ------------------------------------------------------------------------------------------- */

static cjpeg_status status_for_error(guarded_error *error) {
    switch (error->pub.msg_code) {
    case JERR_BAD_PRECISION:
        // The brief, stable name callers match on ("12-bit"), rather than libjpeg's sentence.
        snprintf(error->message, sizeof error->message, "%d-bit", error->pub.msg_parm.i[0]);
        return CJPEG_STATUS_UNSUPPORTED;
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL:
    case JERR_SOF_UNSUPPORTED:
    case JERR_IMAGE_TOO_BIG:  // a side over 65500: JPEG allows 65535
        return CJPEG_STATUS_UNSUPPORTED;
    case JERR_COMPONENT_COUNT:
        // A frame of more than MAX_COMPONENTS (10) components: JPEG allows 255. The same code with a
        // maximum of 4 is a scan of more components than JPEG allows, which is corrupt.
        return error->pub.msg_parm.i[1] == MAX_COMPONENTS ? CJPEG_STATUS_UNSUPPORTED : CJPEG_STATUS_CORRUPT;
    case JERR_NO_BACKING_STORE:
    case JERR_OUT_OF_MEMORY:
        return CJPEG_STATUS_MEMORY_LIMIT;
    case JERR_INPUT_EMPTY:
        return CJPEG_STATUS_TRUNCATED;
    default:
        // Running out of data makes libjpeg invent an EOI marker; whatever error follows is a
        // consequence of the missing bytes, not of bad ones.
        return error->saw_premature_end || error->ran_out ? CJPEG_STATUS_TRUNCATED : CJPEG_STATUS_CORRUPT;
    }
}

static void guarded_error_exit(j_common_ptr cinfo) {
    guarded_error *error = (guarded_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    error->has_message = 1;
    error->failure = status_for_error(error);
    longjmp(error->jump, 1);
}

/* The lowest bit each coefficient of each frame component has been sent to (a scan's Al), or -1 before any
   scan sent it; a sequential file only uses coefficient 0, for the scan that carries the whole component. */
typedef signed char coefficient_bits[MAX_COMPONENTS][DCTSIZE2];

static int covers_every_coefficient(coefficient_bits sent, int components, int progressive) {
    for (int component = 0; component < components; component++) {
        for (int coefficient = 0; coefficient < (progressive ? DCTSIZE2 : 1); coefficient++) {
            if (sent[component][coefficient] != 0) {
                return 0;
            }
        }
    }
    return 1;
}

/* Whether data without an EOI marker holds its whole image all the same, as far as its bytes tell: it ends
   inside, or right after, the entropy-coded data of a Huffman-coded scan (with the EOI marker's first 0xFF
   or not), and the scans up to that one carry every frame component (sequential) or every coefficient of
   every component down to its last bit (progressive). Whether that last scan's data holds all the bits its
   decode needs, only the decode tells: libjpeg warns JWRN_HIT_MARKER when it runs short. Data that ends
   between scans, inside a marker segment or before the scans are all there is cut short. Arithmetic-coded
   scans are decoded with zeros past their data without a word (hitting a marker is how they may end), so
   their ending cannot be told from a cut: never. */
static int ends_where_end_of_image_would_be(const unsigned char *bytes, size_t count) {
    if (bytes == NULL || count < 2 || bytes[0] != 0xFF || bytes[1] != 0xD8) {
        return 0;
    }
    unsigned char identifiers[MAX_COMPONENTS];
    coefficient_bits sent;
    int components = 0;  // 0 until the frame header
    int progressive = 0;
    size_t position = 2;
    for (;;) {
        // A marker: 0xFF, any fill bytes, its code; then, but for RSTn and TEM, a segment. Bytes before it
        // that start no marker, stray ones and stuffed FF 00 pairs, are passed over, as libjpeg's
        // next_marker and the header reader (walkJPEGSegments) pass over them.
        int marker = 0;
        while (marker == 0) {
            while (position < count && bytes[position] != 0xFF) {
                position++;
            }
            while (position < count && bytes[position] == 0xFF) {
                position++;
            }
            if (position >= count) {
                return 0;
            }
            marker = bytes[position++];
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
            continue;
        }
        if (marker == 0xD8 || marker == 0xD9 || count - position < 2) {
            return 0;
        }
        size_t length = (size_t)bytes[position] << 8 | bytes[position + 1];
        if (length < 2 || count - position < length) {
            return 0;
        }
        const unsigned char *segment = bytes + position + 2;
        size_t size = length - 2;
        position += length;
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
            // A frame header: baseline, extended or progressive Huffman coding, the ones libjpeg decodes
            // that way.
            if (components != 0 || marker > 0xC2 || size < 6) {
                return 0;
            }
            components = segment[5];
            if (components < 1 || components > MAX_COMPONENTS || size < 6 + 3 * (size_t)components) {
                return 0;
            }
            for (int component = 0; component < components; component++) {
                identifiers[component] = segment[6 + 3 * component];
            }
            progressive = marker == 0xC2;
            memset(sent, -1, sizeof sent);
        } else if (marker == 0xDA) {
            int in_scan = size > 0 ? segment[0] : 0;
            if (components == 0 || in_scan < 1 || in_scan > MAX_COMPS_IN_SCAN || size < 4 + 2 * (size_t)in_scan) {
                return 0;
            }
            int first = 0, last = 0, low_bit = 0;  // a sequential scan carries whole components
            if (progressive) {
                first = segment[1 + 2 * in_scan];
                last = segment[2 + 2 * in_scan];
                low_bit = segment[3 + 2 * in_scan] & 0x0F;
            }
            if (first > last || last >= DCTSIZE2) {
                return 0;
            }
            for (int index = 0; index < in_scan; index++) {
                int component = 0;
                while (component < components && identifiers[component] != segment[1 + 2 * index]) {
                    component++;
                }
                if (component == components) {
                    return 0;
                }
                for (int coefficient = first; coefficient <= last; coefficient++) {
                    sent[component][coefficient] = (signed char)low_bit;
                }
            }
            // The entropy-coded data, up to a marker other than RSTn (0xFF 0x00 is a stuffed 0xFF).
            for (;;) {
                const unsigned char *found = memchr(bytes + position, 0xFF, count - position);
                if (found == NULL) {
                    return covers_every_coefficient(sent, components, progressive);
                }
                size_t next = (size_t)(found - bytes) + 1;
                while (next < count && bytes[next] == 0xFF) {
                    next++;
                }
                if (next >= count) {
                    return covers_every_coefficient(sent, components, progressive);  // EOI's first byte
                }
                if (bytes[next] != 0x00 && (bytes[next] < 0xD0 || bytes[next] > 0xD7)) {
                    position = (size_t)(found - bytes);
                    break;
                }
                position = next + 1;
            }
        }
    }
}

static void guarded_emit_message(j_common_ptr cinfo, int message_level) {
    guarded_error *error = (guarded_error *)cinfo->err;
    if (message_level >= 0) {
        return;  // trace messages
    }
    // The data ran out where its EOI marker would be, and the memory source supplies one: only a scan
    // that then needs more bits than it has says the data was cut (JWRN_HIT_MARKER, below). libjpeg reads
    // ahead, so a whole file without EOI runs out before its last scan's last MCU, or while it looks for
    // the marker after it.
    if (error->pub.msg_code == JWRN_JPEG_EOF && cinfo->is_decompressor) {
        cjpeg_decoder *decoder = (cjpeg_decoder *)cinfo;  // `cinfo` is its first member
        if (decoder->ends_without_end_of_image == 0) {
            decoder->ends_without_end_of_image =
                ends_where_end_of_image_would_be(decoder->bytes, decoder->count) ? 1 : -1;
        }
        if (decoder->ends_without_end_of_image > 0) {
            error->ran_out = 1;
            return;
        }
    }
    error->pub.num_warnings++;
    if (!error->has_message) {
        (*cinfo->err->format_message)(cinfo, error->message);
        error->has_message = 1;
    }
    // The data ran out: at the end of the bytes (EOF), or at a marker (often EOI) while a scan still
    // needed bits. libjpeg would fill the rest with gray and carry on, through every row a header
    // declares (a 5.7 KB file saying 65500x65500 took seconds of CPU), and the decode fails as
    // truncated whatever follows; so it stops here, through the jump every wrapper call sets.
    // A restart marker is not the end of the data: the interval before it was damaged, and libjpeg
    // resumes with the next one (what restart markers are for), so that is a corrupt band, not a stop.
    // The rest of such an interval is filled with zeros, up to a restart interval of MCUs for two bytes
    // of marker: past 65536 MCUs of that fill, it stops as above. Without a restart interval the marker
    // is never read as a restart, and the fill runs to the end of the scan: that stops too.
    if (error->pub.msg_code == JWRN_HIT_MARKER && cinfo->is_decompressor) {
        j_decompress_ptr decompress = (j_decompress_ptr)cinfo;
        int marker = decompress->unread_marker;
        if (marker >= JPEG_RST0 && marker <= JPEG_RST0 + 7 && decompress->restart_interval > 0 &&
            (long)decompress->restart_interval <= error->restart_fill_left) {
            error->restart_fill_left -= (long)decompress->restart_interval;
            return;
        }
    }
    if (error->pub.msg_code == JWRN_JPEG_EOF || error->pub.msg_code == JWRN_HIT_MARKER) {
        error->saw_premature_end = 1;
        error->failure = CJPEG_STATUS_TRUNCATED;
        longjmp(error->jump, 1);
    }
}

static void guarded_output_message(j_common_ptr cinfo) {
    (void)cinfo;  // the default writes to stderr; the caller gets the message instead
}

static void guarded_error_install(guarded_error *error, j_common_ptr cinfo) {
    memset(error, 0, sizeof *error);
    error->restart_fill_left = 1L << 16;
    cinfo->err = jpeg_std_error(&error->pub);
    error->pub.error_exit = guarded_error_exit;
    error->pub.emit_message = guarded_emit_message;
    error->pub.output_message = guarded_output_message;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding
 * ------------------------------------------------------------------------------------------- */

cjpeg_decoder *cjpeg_decoder_create(const unsigned char *bytes, size_t count, long max_memory_bytes) {
    cjpeg_decoder *decoder = calloc(1, sizeof *decoder);
    if (decoder == NULL) {
        return NULL;
    }
    guarded_error_install(&decoder->error, (j_common_ptr)&decoder->cinfo);
    if (setjmp(decoder->error.jump)) {
        // Only an allocation failure inside jpeg_create_decompress gets here.
        jpeg_destroy_decompress(&decoder->cinfo);
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->cinfo);
    // jpeg_mem_src takes an unsigned long count; refuse nothing here, the source stops at `count`.
    jpeg_mem_src(&decoder->cinfo, bytes, (unsigned long)count);
    decoder->bytes = bytes;
    decoder->count = count;
    if (max_memory_bytes > 0) {
        // Bounds the whole-image coefficient buffer of progressive files: past it, libjpeg asks for a
        // backing store, which this build does not have, and fails instead of allocating.
        decoder->cinfo.mem->max_memory_to_use = max_memory_bytes;
    }
    return decoder;
}

static cjpeg_color_space color_space_of(J_COLOR_SPACE space) {
    switch (space) {
    case JCS_GRAYSCALE: return CJPEG_COLOR_GRAYSCALE;
    case JCS_RGB: return CJPEG_COLOR_RGB;
    case JCS_YCbCr: return CJPEG_COLOR_YCBCR;
    case JCS_CMYK: return CJPEG_COLOR_CMYK;
    case JCS_YCCK: return CJPEG_COLOR_YCCK;
    default: return CJPEG_COLOR_UNKNOWN;
    }
}

static int is_four_component(const struct jpeg_decompress_struct *cinfo) {
    return cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
}

static size_t whole_image_buffer_bytes(const struct jpeg_decompress_struct *cinfo) {
    // Mirrors the coefficient controller's request: each component padded to whole iMCUs.
    size_t total = 0;
    for (int index = 0; index < cinfo->num_components; index++) {
        const jpeg_component_info *component = &cinfo->comp_info[index];
        size_t columns = component->width_in_blocks;
        size_t rows = component->height_in_blocks;
        size_t horizontal = (size_t)component->h_samp_factor;
        size_t vertical = (size_t)component->v_samp_factor;
        columns = (columns + horizontal - 1) / horizontal * horizontal;
        rows = (rows + vertical - 1) / vertical * vertical;
        total += columns * rows * sizeof(JBLOCK);
    }
    return total;
}

/* libjpeg calls this before each jpeg_read_scanlines batch and, for files with several scans, as
   jpeg_start_decompress reads them (after each scan's SOS marker, before its data); leaving through the
   error jump stops the decode where it is: once the cancel flag is raised, or past CJPEG_MAX_SCANS. */
static void progress_monitor(j_common_ptr cinfo) {
    // `cinfo` is the first member of the decoder.
    cjpeg_decoder *decoder = (cjpeg_decoder *)cinfo;
    if (cjpeg_decoder_is_cancelled(decoder)) {
        decoder->error.failure = CJPEG_STATUS_CANCELLED;
        longjmp(decoder->error.jump, 1);
    }
    if (decoder->cinfo.input_scan_number > CJPEG_MAX_SCANS) {
        snprintf(decoder->error.message, sizeof decoder->error.message, "more than %d scans", CJPEG_MAX_SCANS);
        decoder->error.has_message = 1;
        decoder->error.failure = CJPEG_STATUS_UNSUPPORTED;
        longjmp(decoder->error.jump, 1);
    }
}

cjpeg_status cjpeg_decoder_read_header(cjpeg_decoder *decoder, cjpeg_header *header) {
    if (decoder == NULL || header == NULL || decoder->has_header) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    if (setjmp(decoder->error.jump)) {
        return decoder->error.failure;
    }
    jpeg_read_header(&decoder->cinfo, TRUE);
    decoder->has_header = 1;
    // Watches every decode from here on: the cancel flag, when one is set, and the number of scans.
    decoder->progress.progress_monitor = progress_monitor;
    decoder->cinfo.progress = &decoder->progress;
    if (decoder->error.saw_premature_end) {
        return CJPEG_STATUS_TRUNCATED;
    }

    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    memset(header, 0, sizeof *header);
    header->width = (int)cinfo->image_width;
    header->height = (int)cinfo->image_height;
    header->components = cinfo->num_components;
    header->color_space = color_space_of(cinfo->jpeg_color_space);
    header->data_precision = cinfo->data_precision;
    header->is_progressive = cinfo->progressive_mode ? 1 : 0;
    header->is_arithmetic = cinfo->arith_code ? 1 : 0;
    header->needs_whole_image_buffer = jpeg_has_multiple_scans(cinfo) ? 1 : 0;
    header->whole_image_buffer_bytes = header->needs_whole_image_buffer ? whole_image_buffer_bytes(cinfo) : 0;
    header->has_adobe_marker = cinfo->saw_Adobe_marker ? 1 : 0;

    // libjpeg-turbo converts every three-component space and grayscale straight to RGBA; CMYK and
    // YCCK come out as CMYK and are converted below, four bytes per pixel either way.
    cinfo->out_color_space = is_four_component(cinfo) ? JCS_CMYK : JCS_EXT_RGBA;
    return CJPEG_STATUS_OK;
}

cjpeg_status cjpeg_decoder_set_scale(cjpeg_decoder *decoder, int scale_numerator, int *output_width,
                                     int *output_height) {
    if (decoder == NULL || !decoder->has_header || decoder->has_decoded || scale_numerator < 1 ||
        scale_numerator > 8 || output_width == NULL || output_height == NULL) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    if (setjmp(decoder->error.jump)) {
        return decoder->error.failure;
    }
    decoder->cinfo.scale_num = (unsigned int)scale_numerator;
    decoder->cinfo.scale_denom = 8;
    jpeg_calc_output_dimensions(&decoder->cinfo);
    *output_width = (int)decoder->cinfo.output_width;
    *output_height = (int)decoder->cinfo.output_height;
    return CJPEG_STATUS_OK;
}

static unsigned char multiply_255(unsigned int a, unsigned int b) {
    return (unsigned char)((a * b + 127) / 255);
}

// CMYK to RGB in place, four bytes per pixel. Adobe applications store the samples inverted
// (0 means full ink), which is what the APP14 marker announces.
static void convert_cmyk_row(unsigned char *row, size_t width, int inverted) {
    for (size_t x = 0; x < width; x++) {
        unsigned char *pixel = row + x * 4;
        unsigned int cyan = pixel[0], magenta = pixel[1], yellow = pixel[2], black = pixel[3];
        if (!inverted) {
            cyan = 255 - cyan;
            magenta = 255 - magenta;
            yellow = 255 - yellow;
            black = 255 - black;
        }
        pixel[0] = multiply_255(cyan, black);
        pixel[1] = multiply_255(magenta, black);
        pixel[2] = multiply_255(yellow, black);
        pixel[3] = 255;
    }
}

// The stored samples as ink, in place: Adobe's inverted files store 255 for no ink.
static void ink_from_samples(unsigned char *row, size_t width, int inverted) {
    if (!inverted) {
        return;
    }
    for (size_t index = 0; index < width * 4; index++) {
        row[index] = (unsigned char)(255 - row[index]);
    }
}

cjpeg_status cjpeg_decoder_set_ink_transform(cjpeg_decoder *decoder, cjpeg_ink_transform transform, void *context) {
    if (decoder == NULL || decoder->has_decoded) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    decoder->ink_transform = transform;
    decoder->ink_transform_context = context;
    return CJPEG_STATUS_OK;
}

cjpeg_status cjpeg_decoder_set_cancel_flag(cjpeg_decoder *decoder, const int *flag) {
    if (decoder == NULL || !decoder->has_header || decoder->has_decoded) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    decoder->cancel_flag = flag;
    return CJPEG_STATUS_OK;
}

cjpeg_status cjpeg_decoder_start(cjpeg_decoder *decoder) {
    if (decoder == NULL || !decoder->has_header || decoder->has_decoded) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    decoder->has_decoded = 1;
    if (setjmp(decoder->error.jump)) {
        return decoder->error.failure;
    }
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    jpeg_calc_output_dimensions(cinfo);
    if (cinfo->output_components != 4 || cinfo->output_width == 0 || cinfo->output_height == 0) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    jpeg_start_decompress(cinfo);
    decoder->is_started = 1;
    return CJPEG_STATUS_OK;
}

cjpeg_status cjpeg_decoder_read_rows(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                     int max_rows, int *rows_read) {
    if (decoder == NULL || !decoder->is_started || rgba == NULL || rows_read == NULL || max_rows < 1 ||
        bytes_per_row < (size_t)decoder->cinfo.output_width * 4) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    *rows_read = 0;
    if (setjmp(decoder->error.jump)) {
        return decoder->error.failure;
    }
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    size_t width = cinfo->output_width;
    int converts_cmyk = is_four_component(cinfo);
    int inverted = cinfo->saw_Adobe_marker;
    // libjpeg hands out at most a few rows (one iMCU row of output) a call; ask for them all at once.
    JSAMPROW rows[16];
    int wanted = (int)(cinfo->output_height - cinfo->output_scanline);
    if (wanted > max_rows) {
        wanted = max_rows;
    }
    while (*rows_read < wanted) {
        int batch = wanted - *rows_read < 16 ? wanted - *rows_read : 16;
        for (int index = 0; index < batch; index++) {
            rows[index] = rgba + (size_t)(*rows_read + index) * bytes_per_row;
        }
        JDIMENSION count = jpeg_read_scanlines(cinfo, rows, (JDIMENSION)batch);
        if (count == 0) {
            // A memory source never suspends, so no progress means libjpeg gave up.
            jpeg_abort_decompress(cinfo);
            decoder->is_started = 0;
            return CJPEG_STATUS_CORRUPT;
        }
        if (converts_cmyk) {
            for (JDIMENSION index = 0; index < count; index++) {
                if (decoder->ink_transform != NULL) {
                    ink_from_samples(rows[index], width, inverted);
                    decoder->ink_transform(rows[index], width, decoder->ink_transform_context);
                } else {
                    convert_cmyk_row(rows[index], width, inverted);
                }
            }
        }
        *rows_read += (int)count;
    }
    if (cinfo->output_scanline < cinfo->output_height) {
        return CJPEG_STATUS_OK;
    }
    decoder->is_started = 0;
    jpeg_finish_decompress(cinfo);
    // libjpeg pads missing data with gray and only warns; a half image is not the image.
    return decoder->error.saw_premature_end ? CJPEG_STATUS_TRUNCATED : CJPEG_STATUS_OK;
}

cjpeg_status cjpeg_decoder_decode_rgba(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                       size_t rgba_byte_count) {
    if (decoder == NULL || !decoder->has_header || decoder->has_decoded || rgba == NULL) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    cjpeg_status status = cjpeg_decoder_start(decoder);
    if (status != CJPEG_STATUS_OK) {
        return status;
    }
    size_t width = (size_t)decoder->cinfo.output_width;
    size_t height = (size_t)decoder->cinfo.output_height;
    if (bytes_per_row < width * 4 || rgba_byte_count < bytes_per_row * (height - 1) + width * 4) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    size_t row = 0;
    while (status == CJPEG_STATUS_OK && row < height) {
        int count = 0;
        status = cjpeg_decoder_read_rows(decoder, rgba + row * bytes_per_row, bytes_per_row, (int)(height - row),
                                         &count);
        row += (size_t)count;
    }
    return status;
}

const char *cjpeg_decoder_message(const cjpeg_decoder *decoder) {
    if (decoder == NULL || !decoder->error.has_message) {
        return "";
    }
    return decoder->error.message;
}

void cjpeg_decoder_destroy(cjpeg_decoder *decoder) {
    if (decoder == NULL) {
        return;
    }
    jpeg_destroy_decompress(&decoder->cinfo);
    free(decoder);
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 * ------------------------------------------------------------------------------------------- */

// A destination that grows one malloc'ed buffer, so the wrapper (not libjpeg) owns it and can free
// it when an error longjmps out of the middle of a write.
typedef struct {
    struct jpeg_destination_mgr pub;
    unsigned char *buffer;
    size_t capacity;
} growing_destination;

static void destination_init(j_compress_ptr cinfo) {
    growing_destination *destination = (growing_destination *)cinfo->dest;
    destination->pub.next_output_byte = destination->buffer;
    destination->pub.free_in_buffer = destination->capacity;
}

static boolean destination_empty(j_compress_ptr cinfo) {
    growing_destination *destination = (growing_destination *)cinfo->dest;
    size_t grown_capacity = destination->capacity * 2;
    unsigned char *grown = realloc(destination->buffer, grown_capacity);
    if (grown == NULL) {
        ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    }
    // libjpeg calls this only when the buffer is full, so everything up to `capacity` is written.
    destination->pub.next_output_byte = grown + destination->capacity;
    destination->pub.free_in_buffer = grown_capacity - destination->capacity;
    destination->buffer = grown;
    destination->capacity = grown_capacity;
    return TRUE;
}

static void destination_term(j_compress_ptr cinfo) {
    (void)cinfo;  // the byte count is read from free_in_buffer after jpeg_finish_compress
}

// Everything the encoder touches after setjmp lives on the heap, so a longjmp cannot leave it in
// an indeterminate register copy.
typedef struct {
    struct jpeg_compress_struct cinfo;
    guarded_error error;
    growing_destination destination;
} encoder_state;

cjpeg_status cjpeg_encode_rgba(const unsigned char *rgba, int width, int height, size_t bytes_per_row, int quality,
                               cjpeg_encoded *result) {
    if (result == NULL) {
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    memset(result, 0, sizeof *result);
    if (rgba == NULL || width < 1 || height < 1 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION ||
        bytes_per_row < (size_t)width * 4 || quality < 1 || quality > 100) {
        snprintf(result->message, sizeof result->message, "invalid arguments");
        return CJPEG_STATUS_INVALID_ARGUMENT;
    }
    encoder_state *state = calloc(1, sizeof *state);
    if (state == NULL) {
        snprintf(result->message, sizeof result->message, "out of memory");
        return CJPEG_STATUS_MEMORY_LIMIT;
    }
    state->destination.capacity = 64 * 1024;
    state->destination.buffer = malloc(state->destination.capacity);
    if (state->destination.buffer == NULL) {
        free(state);
        snprintf(result->message, sizeof result->message, "out of memory");
        return CJPEG_STATUS_MEMORY_LIMIT;
    }

    guarded_error_install(&state->error, (j_common_ptr)&state->cinfo);
    if (setjmp(state->error.jump)) {
        cjpeg_status failure = state->error.failure;
        snprintf(result->message, sizeof result->message, "%s", state->error.message);
        jpeg_destroy_compress(&state->cinfo);
        free(state->destination.buffer);
        free(state);
        return failure == CJPEG_STATUS_OK ? CJPEG_STATUS_CORRUPT : failure;
    }
    jpeg_create_compress(&state->cinfo);
    state->destination.pub.init_destination = destination_init;
    state->destination.pub.empty_output_buffer = destination_empty;
    state->destination.pub.term_destination = destination_term;
    state->cinfo.dest = &state->destination.pub;

    state->cinfo.image_width = (JDIMENSION)width;
    state->cinfo.image_height = (JDIMENSION)height;
    state->cinfo.input_components = 4;
    // libjpeg-turbo reads RGBA directly and ignores the fourth byte, which drops alpha for free.
    state->cinfo.in_color_space = JCS_EXT_RGBA;
    jpeg_set_defaults(&state->cinfo);
    jpeg_set_quality(&state->cinfo, quality, TRUE);
    jpeg_start_compress(&state->cinfo, TRUE);
    while (state->cinfo.next_scanline < state->cinfo.image_height) {
        JSAMPROW rows[1] = { (JSAMPROW)(rgba + (size_t)state->cinfo.next_scanline * bytes_per_row) };
        jpeg_write_scanlines(&state->cinfo, rows, 1);
    }
    jpeg_finish_compress(&state->cinfo);

    result->count = state->destination.capacity - state->destination.pub.free_in_buffer;
    result->bytes = state->destination.buffer;
    jpeg_destroy_compress(&state->cinfo);
    free(state);
    return CJPEG_STATUS_OK;
}

void cjpeg_free(void *pointer) {
    free(pointer);
}

#endif /* defined(__linux__) */
