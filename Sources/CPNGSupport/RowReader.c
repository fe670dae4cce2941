/* Linux only: on Apple platforms ImageIO decodes, and this target (which the package still builds there)
 * compiles to nothing, needing no libjpeg or libpng headers. */
#if defined(__linux__)

#include "CPNGSupport.h"
#include "Callbacks.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

/* libpng's progressive row API, set up to give what png_image_finish_read gives for an 8-bit RGBA
 * image: palettes and low bit depths expanded, tRNS made alpha, 16-bit samples scaled to 8 bits,
 * gray widened, opaque images given alpha 255. The simplified API adds no other change as long as it
 * corrects no gamma, so files with another gamma are left to it (CPNG_READER_NEEDS_WHOLE_IMAGE). An
 * Adam7 file is read as the simplified API reads it, with libpng's interlace handling: every pass goes
 * over every row of the one image, and each fills in its own pixels. The 16-bit reader makes the same
 * changes but keeps 16-bit samples as stored, for the Swift side to convert whatever the gamma.
 *
 * libpng reports errors by longjmp-ing to png_jmpbuf; no local variable changed after a setjmp is
 * read after the jump lands. */

struct cpng_reader {
    png_structp png;
    png_infop info;
    const unsigned char *bytes;
    size_t count;
    size_t offset;
    int failed;
    char message[CPNG_MESSAGE_SIZE];
};

static void read_bytes(png_structp png, png_bytep data, size_t length) {
    cpng_reader *reader = png_get_io_ptr(png);
    if (length > reader->count - reader->offset) {
        // The simplified API's words for a short stream, which the Swift side reads as truncation.
        png_error(png, "read beyond end of data");
    }
    memcpy(data, reader->bytes + reader->offset, length);
    reader->offset += length;
}

/* Whether the simplified API, writing 8-bit sRGB, leaves the samples as they are: an sRGB chunk, no
 * gAMA (it assumes sRGB; the Swift side asks the same of it for 16-bit files), or a gAMA close to
 * sRGB's 0.45455. libpng corrects when the product of the file's gamma and 2.2 is 5 % or more away
 * from 1; this takes a band inside that one, so whatever it streams libpng leaves alone. */
static int keeps_samples(png_structp png, png_infop info) {
    if (png_get_valid(png, info, PNG_INFO_sRGB)) {
        return 1;
    }
    png_fixed_point gamma = 0;
    if (!png_get_gAMA_fixed(png, info, &gamma)) {
        return 1;
    }
    double ratio = (double)gamma / 45455.0;
    return ratio > 0.96 && ratio < 1.04;
}

void cpng_reader_close(cpng_reader *reader) {
    if (reader == NULL) {
        return;
    }
    png_destroy_read_struct(&reader->png, &reader->info, NULL);
    free(reader);
}

/* A reader over `count` bytes with libpng's structures made and its reads coming from the bytes;
 * NULL when memory runs out. */
static cpng_reader *new_reader(const unsigned char *bytes, size_t count) {
    cpng_reader *reader = calloc(1, sizeof *reader);
    if (reader == NULL) {
        return NULL;
    }
    reader->bytes = bytes;
    reader->count = count;
    reader->png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, reader->message, cpng_record_error, cpng_ignore_warning);
    if (reader->png != NULL) {
        reader->info = png_create_info_struct(reader->png);
    }
    if (reader->png == NULL || reader->info == NULL) {
        cpng_reader_close(reader);
        return NULL;
    }
    png_set_read_fn(reader->png, reader, read_bytes);
    return reader;
}

/* The reader behind both openers: 8-bit RGBA rows, the simplified API's pixels (`sixteen_bit` 0), or
 * 16-bit RGBA rows of the samples as stored (`sixteen_bit` 1, for a 16-bit file only). `has_alpha`,
 * `passes` and `gamma` may be NULL. */
static cpng_reader_status open_reader(const unsigned char *bytes, size_t count, int sixteen_bit,
                                      cpng_reader **result, unsigned *width, unsigned *height, int *has_alpha,
                                      int *passes, int *gamma, char *message) {
    *result = NULL;
    message[0] = 0;
    cpng_reader *reader = new_reader(bytes, count);
    if (reader == NULL) {
        snprintf(message, CPNG_MESSAGE_SIZE, "out of memory");
        return CPNG_READER_FAILED;
    }
    if (setjmp(png_jmpbuf(reader->png))) {
        snprintf(message, CPNG_MESSAGE_SIZE, "%s", reader->message[0] ? reader->message : "libpng failed");
        cpng_reader_close(reader);
        return CPNG_READER_FAILED;
    }
    png_read_info(reader->png, reader->info);

    png_uint_32 image_width = 0, image_height = 0;
    int depth = 0, color = 0, interlace = 0;
    png_get_IHDR(reader->png, reader->info, &image_width, &image_height, &depth, &color, &interlace, NULL, NULL);
    int interlaced = interlace != PNG_INTERLACE_NONE;
    int refused = sixteen_bit ? depth != 16 : interlaced && (passes == NULL || depth == 16);
    if (refused || (!sixteen_bit && !keeps_samples(reader->png, reader->info))) {
        cpng_reader_close(reader);
        return CPNG_READER_NEEDS_WHOLE_IMAGE;
    }
    /* libpng keeps an sRGB chunk's gamma (45455) over a gAMA chunk's, and drops a gAMA it rejects. */
    png_fixed_point file_gamma = 45455;
    if (!png_get_valid(reader->png, reader->info, PNG_INFO_sRGB)) {
        png_get_gAMA_fixed(reader->png, reader->info, &file_gamma);
    }
    int transparent = png_get_valid(reader->png, reader->info, PNG_INFO_tRNS) != 0;
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(reader->png);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) {
        png_set_expand_gray_1_2_4_to_8(reader->png);
    }
    if (transparent) {
        png_set_tRNS_to_alpha(reader->png);
    }
    if (depth == 16 && !sixteen_bit) {
        png_set_scale_16(reader->png);
    }
    if ((color & PNG_COLOR_MASK_COLOR) == 0) {
        png_set_gray_to_rgb(reader->png);
    }
    int alpha = (color & PNG_COLOR_MASK_ALPHA) != 0 || transparent;
    if (!alpha) {
        png_set_filler(reader->png, sixteen_bit ? 0xFFFF : 0xFF, PNG_FILLER_AFTER);
    }
    /* PNG stores 16-bit samples big-endian; the caller reads them as native integers. */
    const unsigned short probe = 1;
    if (sixteen_bit && *(const unsigned char *)&probe == 1) {
        png_set_swap(reader->png);
    }
    /* 1 for a sequential file; for Adam7, 7, and libpng spreads each pass's pixels over the rows. */
    int pass_count = png_set_interlace_handling(reader->png);
    png_read_update_info(reader->png, reader->info);
    if (png_get_rowbytes(reader->png, reader->info) != (size_t)image_width * (sixteen_bit ? 8 : 4)) {
        snprintf(message, CPNG_MESSAGE_SIZE, "unexpected row layout after the transforms");
        cpng_reader_close(reader);
        return CPNG_READER_FAILED;
    }
    *width = image_width;
    *height = image_height;
    if (has_alpha != NULL) {
        *has_alpha = alpha;
    }
    if (passes != NULL) {
        *passes = pass_count;
    }
    if (gamma != NULL) {
        *gamma = (int)file_gamma;
    }
    *result = reader;
    return CPNG_READER_READY;
}

cpng_reader_status cpng_reader_open(const unsigned char *bytes, size_t count, cpng_reader **result,
                                    unsigned *width, unsigned *height, int *has_alpha, int *passes,
                                    char *message) {
    return open_reader(bytes, count, 0, result, width, height, has_alpha, passes, NULL, message);
}

cpng_reader_status cpng_reader_open_16(const unsigned char *bytes, size_t count, cpng_reader **result,
                                       unsigned *width, unsigned *height, int *passes, int *gamma, char *message) {
    return open_reader(bytes, count, 1, result, width, height, NULL, passes, gamma, message);
}

int cpng_reader_read_rows(cpng_reader *reader, unsigned char *rows, size_t stride, unsigned count) {
    if (reader->failed) {
        return -1;
    }
    if (setjmp(png_jmpbuf(reader->png))) {
        reader->failed = 1;
        return -1;
    }
    for (unsigned row = 0; row < count; row++) {
        png_read_row(reader->png, rows + (size_t)row * stride, NULL);
    }
    return 0;
}

const char *cpng_reader_message(const cpng_reader *reader) {
    return reader->message;
}

int cpng_read_icc_profile(const unsigned char *bytes, size_t count, unsigned char **profile, size_t *length) {
    *profile = NULL;
    *length = 0;
    cpng_reader *reader = new_reader(bytes, count);
    if (reader == NULL) {
        return -1;
    }
    if (setjmp(png_jmpbuf(reader->png))) {
        free(*profile);
        *profile = NULL;
        *length = 0;
        cpng_reader_close(reader);
        return -1;
    }
    png_read_info(reader->png, reader->info);
    png_charp name = NULL;
    int compression = 0;
    png_bytep data = NULL;
    png_uint_32 size = 0;
    if (png_get_iCCP(reader->png, reader->info, &name, &compression, &data, &size) == PNG_INFO_iCCP && size > 0) {
        *profile = malloc(size);
        if (*profile != NULL) {
            memcpy(*profile, data, size);
            *length = size;
        }
    }
    cpng_reader_close(reader);
    return *profile != NULL ? 1 : 0;
}

#endif /* defined(__linux__) */
