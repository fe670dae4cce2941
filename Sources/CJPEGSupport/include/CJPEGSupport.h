#ifndef CJPEGSUPPORT_H
#define CJPEGSUPPORT_H

/*
 * A small, setjmp-guarded wrapper around libjpeg.
 *
 * libjpeg reports a fatal error by calling error_exit(), whose default implementation prints the
 * message and calls exit(). Swift cannot setjmp, so every libjpeg call that may fail goes through a
 * function here that installs a setjmp point and an error manager that longjmps back to it. A
 * corrupt, truncated or unsupported file therefore becomes a status code plus libjpeg's message.
 *
 * No libjpeg type appears in this header: the decoder is an opaque handle.
 */

#include <stddef.h>

/* What a wrapper call reports. */
typedef enum {
    CJPEG_STATUS_OK = 0,
    /* The data is malformed; the message is libjpeg's. */
    CJPEG_STATUS_CORRUPT = 1,
    /* The data ends before the image does: libjpeg ran out of it, or met a marker while a scan still
     * needed bits (a restart marker only without a restart interval, or past the zero fill that
     * guarded_emit_message allows). */
    CJPEG_STATUS_TRUNCATED = 2,
    /* A valid file that this build cannot decode, such as 12-bit precision, a side over 65500 or more
     * than CJPEG_MAX_SCANS scans. */
    CJPEG_STATUS_UNSUPPORTED = 3,
    /* libjpeg needed more memory than the limit given at creation allows. */
    CJPEG_STATUS_MEMORY_LIMIT = 4,
    /* The arguments of the call are invalid (a bug in the caller, not in the data). */
    CJPEG_STATUS_INVALID_ARGUMENT = 5,
    /* A shortcut does not take this file (nothing was decoded): decode it the usual way. */
    CJPEG_STATUS_DECLINED = 6,
    /* The cancel flag (cjpeg_decoder_set_cancel_flag) was raised: decoding stopped part way. */
    CJPEG_STATUS_CANCELLED = 7,
} cjpeg_status;

/* The colour model of the stored components. */
typedef enum {
    CJPEG_COLOR_UNKNOWN = 0,
    CJPEG_COLOR_GRAYSCALE = 1,
    CJPEG_COLOR_RGB = 2,
    CJPEG_COLOR_YCBCR = 3,
    CJPEG_COLOR_CMYK = 4,
    CJPEG_COLOR_YCCK = 5,
} cjpeg_color_space;

/* What the header says, read without decoding any pixels. */
typedef struct {
    int width;
    int height;
    int components;
    cjpeg_color_space color_space;
    int data_precision;
    int is_progressive;
    int is_arithmetic;
    /* Whether libjpeg must hold every coefficient of the full image in memory while decoding
       (progressive or multi-scan files), whatever the output scale. */
    int needs_whole_image_buffer;
    /* The bytes of that buffer when it is needed, 0 otherwise. */
    size_t whole_image_buffer_bytes;
    /* Whether an Adobe APP14 marker was present (its CMYK samples are stored inverted). */
    int has_adobe_marker;
} cjpeg_header;

typedef struct cjpeg_decoder cjpeg_decoder;

/* Creates a decoder over `bytes` (not copied: they must outlive the decoder). `max_memory_bytes`
   caps libjpeg's own large buffers (0 means no cap). Returns NULL when out of memory. */
cjpeg_decoder *cjpeg_decoder_create(const unsigned char *bytes, size_t count, long max_memory_bytes);

/* The most scans a file may have: decoding stops at the next one with CJPEG_STATUS_UNSUPPORTED ("more
   than 500 scans"), as libjpeg-turbo advises (djpeg's -maxscans, TurboJPEG's scan limit). Each scan of a
   progressive file goes over every block of the image, and one that gives thousands of blocks no AC
   coefficients takes a few bytes: libjpeg takes any number of them, repeated ones too, so a small file
   can keep a decode busy for minutes. Encoders write about ten. */
#define CJPEG_MAX_SCANS 500

/* Reads the markers up to the first scan and fills `header`. */
cjpeg_status cjpeg_decoder_read_header(cjpeg_decoder *decoder, cjpeg_header *header);

/* Asks for a DCT-domain scale of `scale_numerator`/8 (1...8) and reports the output size. */
cjpeg_status cjpeg_decoder_set_scale(cjpeg_decoder *decoder, int scale_numerator, int *output_width,
                                     int *output_height);

/* Converts `width` pixels of `row` in place: four bytes each, cyan, magenta, yellow and black ink
   (0 none, 255 full, whatever the file stored), to 8-bit RGBA with opaque alpha. */
typedef void (*cjpeg_ink_transform)(unsigned char *row, size_t width, void *context);

/* Sends the rows of a CMYK or YCCK file to `transform` (with `context`) as ink, instead of the
   built-in conversion (which multiplies each colour by black, with no profile); NULL restores it.
   Set before decoding starts; other colour spaces ignore it. */
cjpeg_status cjpeg_decoder_set_ink_transform(cjpeg_decoder *decoder, cjpeg_ink_transform transform, void *context);

/* Has decoding stop part way, with CJPEG_STATUS_CANCELLED, once the int at `flag` is non-zero: libjpeg
   reads it (atomically) before each batch of rows and, for progressive and multi-scan files, while it
   reads the scans in cjpeg_decoder_start; the DC-only decoder reads it once a row of MCUs. `flag` must
   outlive the decoder; NULL (the default) never stops. Set after reading the header. */
cjpeg_status cjpeg_decoder_set_cancel_flag(cjpeg_decoder *decoder, const int *flag);

/* Decodes the whole image into `rgba`: output_height rows of `bytes_per_row` bytes (at least
   output_width * 4), 8-bit straight RGBA with opaque alpha. `rgba_byte_count` is the buffer size. */
cjpeg_status cjpeg_decoder_decode_rgba(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                       size_t rgba_byte_count);

/* Starts decoding at the scale set, for cjpeg_decoder_read_rows (instead of cjpeg_decoder_decode_rgba). */
cjpeg_status cjpeg_decoder_start(cjpeg_decoder *decoder);

/* Decodes the next rows, at most `max_rows`, into `rgba` (its first row is the next output row), as
   cjpeg_decoder_decode_rgba does, and stores how many in `rows_read`. After the last row the status
   says whether the data was complete. Lets a caller work on the rows above while later ones decode. */
cjpeg_status cjpeg_decoder_read_rows(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                     int max_rows, int *rows_read);

/* Whether cjpeg_decoder_decode_dc_rgba can take this file at the scale set: a 1/8 scale, baseline
   Huffman coding, 8 bits, one scan of every component, YCbCr or grayscale, no restart interval,
   luma at full resolution and chroma at full or half. */
int cjpeg_decoder_can_decode_dc(const cjpeg_decoder *decoder);

/* Decodes the 1/8 scale from DC coefficients alone, to exactly the pixels libjpeg-turbo gives at that
   scale, with the entropy-coded data split between `threads` (1 or 2) threads when it is large
   enough (always, with `always_split`).
   Returns CJPEG_STATUS_DECLINED, with the decoder untouched, when the file is not one it takes, its
   data is anything but well formed, or a 2x2 block's values leave the range where libjpeg-turbo's C and
   SIMD transforms agree: then decode it the usual way. Returns CJPEG_STATUS_CANCELLED
   when the cancel flag was raised, checked once a row of MCUs on each thread. */
cjpeg_status cjpeg_decoder_decode_dc_rgba(cjpeg_decoder *decoder, unsigned char *rgba, size_t bytes_per_row,
                                          size_t rgba_byte_count, int threads, int always_split);

/* The message of the last failed call, or of the first warning; never NULL. Owned by the decoder. */
const char *cjpeg_decoder_message(const cjpeg_decoder *decoder);

/* Releases the decoder and everything libjpeg allocated for it. Accepts NULL. */
void cjpeg_decoder_destroy(cjpeg_decoder *decoder);

/* The result of an encode: the bytes (malloc'ed, release with cjpeg_free) and a message on failure. */
typedef struct {
    unsigned char *bytes;
    size_t count;
    char message[200];
} cjpeg_encoded;

/* Encodes `height` rows of `bytes_per_row` bytes of RGBA as a baseline JPEG of `quality` (1...100),
   dropping alpha. On failure `result->bytes` is NULL and `result->message` says why. */
cjpeg_status cjpeg_encode_rgba(const unsigned char *rgba, int width, int height, size_t bytes_per_row, int quality,
                               cjpeg_encoded *result);

/* Releases memory returned by this wrapper. Accepts NULL. */
void cjpeg_free(void *pointer);

#endif
