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
#include <zlib.h>

/* libpng's full write API, for the two settings its simplified API does not offer. libpng reports
 * errors by longjmp-ing to png_jmpbuf; everything the error path frees lives on the heap, so no
 * local variable is read after a longjmp. */

typedef struct {
    unsigned char *buffer;
    size_t count;
    size_t capacity;
} growing_output;

typedef struct {
    png_structp png;
    png_infop info;
    growing_output output;
    char message[CPNG_MESSAGE_SIZE];
} encoder_state;

static void write_bytes(png_structp png, png_bytep data, size_t length) {
    growing_output *output = png_get_io_ptr(png);
    if (length > output->capacity - output->count) {
        size_t capacity = output->capacity;
        while (length > capacity - output->count) {
            if (capacity > ((size_t)-1) / 2) {
                png_error(png, "output too large");
            }
            capacity *= 2;
        }
        unsigned char *grown = realloc(output->buffer, capacity);
        if (grown == NULL) {
            png_error(png, "out of memory");
        }
        output->buffer = grown;
        output->capacity = capacity;
    }
    memcpy(output->buffer + output->count, data, length);
    output->count += length;
}

static void flush_bytes(png_structp png) {
    (void)png;
}

int cpng_encode_rgba(const unsigned char *rgba, int width, int height, size_t bytes_per_row, cpng_encoded *result) {
    if (result == NULL) {
        return -1;
    }
    memset(result, 0, sizeof *result);
    if (rgba == NULL || width < 1 || height < 1 || width > PNG_USER_WIDTH_MAX || height > PNG_USER_HEIGHT_MAX ||
        bytes_per_row < (size_t)width * 4) {
        snprintf(result->message, sizeof result->message, "invalid arguments");
        return -1;
    }
    encoder_state *state = calloc(1, sizeof *state);
    if (state == NULL) {
        snprintf(result->message, sizeof result->message, "out of memory");
        return -1;
    }
    // Raw rows plus a little: a filtered, run-length coded image rarely needs more, and the
    // output grows if it does.
    state->output.capacity = (size_t)height * ((size_t)width * 4 + 1) / 2 + 4096;
    state->output.buffer = malloc(state->output.capacity);
    state->png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, state->message, cpng_record_error, cpng_ignore_warning);
    if (state->png != NULL) {
        state->info = png_create_info_struct(state->png);
    }
    if (state->output.buffer == NULL || state->png == NULL || state->info == NULL) {
        snprintf(result->message, sizeof result->message, "out of memory");
        png_destroy_write_struct(&state->png, &state->info);
        free(state->output.buffer);
        free(state);
        return -1;
    }
    if (setjmp(png_jmpbuf(state->png))) {
        snprintf(result->message, sizeof result->message, "%s", state->message[0] ? state->message : "libpng failed");
        png_destroy_write_struct(&state->png, &state->info);
        free(state->output.buffer);
        free(state);
        return -1;
    }
    png_set_write_fn(state->png, &state->output, write_bytes, flush_bytes);
    png_set_IHDR(state->png, state->info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB_ALPHA,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    // After filtering, photographs hold few repeats worth a long search: zlib's run-length strategy
    // comes within a few percent of its default level's size in a fifth of the time, and still
    // packs flat areas (which filter to runs of zeros) tightly.
    png_set_filter(state->png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
    png_set_compression_level(state->png, 1);
    png_set_compression_strategy(state->png, Z_RLE);
    png_write_info(state->png, state->info);
    for (int row = 0; row < height; row++) {
        png_write_row(state->png, (png_const_bytep)(rgba + (size_t)row * bytes_per_row));
    }
    png_write_end(state->png, state->info);
    png_destroy_write_struct(&state->png, &state->info);

    result->bytes = state->output.buffer;
    result->count = state->output.count;
    free(state);
    return 0;
}

void cpng_free(void *pointer) {
    free(pointer);
}

#endif /* defined(__linux__) */
