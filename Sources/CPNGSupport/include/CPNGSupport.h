#ifndef CPNGSUPPORT_H
#define CPNGSUPPORT_H

#include <stddef.h>

/// The bytes of an encoded PNG (free with `cpng_free`), or an error message.
typedef struct {
    unsigned char *bytes;
    size_t count;
    char message[200];
} cpng_encoded;

/// Encodes 8-bit RGBA rows as a PNG, favouring speed: every row gets libpng's adaptive filter
/// choice and zlib compresses with its run-length strategy. Returns 0 on success; on failure
/// `result->message` says why and `result->bytes` is NULL.
int cpng_encode_rgba(const unsigned char *rgba, int width, int height, size_t bytes_per_row, cpng_encoded *result);

/// Frees the bytes of a `cpng_encoded`.
void cpng_free(void *pointer);

/// A PNG read row by row as 8-bit straight RGBA, the pixels libpng's simplified API gives for the same
/// file, without ever holding the whole image. Opaque; made by `cpng_reader_open`.
typedef struct cpng_reader cpng_reader;

/// What `cpng_reader_open` found.
typedef enum {
    /// The reader is ready: `cpng_reader_read_rows` gives the rows top to bottom, once per pass.
    CPNG_READER_READY = 0,
    /// A valid PNG that only a whole-image decode reads right: a gamma other than sRGB's, which the
    /// simplified API corrects; Adam7-interlaced when the reader was not asked for passes (its last pass
    /// finishes every row), and always at 16 bits (libpng reduces those wrongly: see the Swift side).
    CPNG_READER_NEEDS_WHOLE_IMAGE = 1,
    /// libpng failed; the message says why.
    CPNG_READER_FAILED = 2,
} cpng_reader_status;

/// Reads the chunks before the image data of the `count` bytes at `bytes`, which must stay valid
/// until `cpng_reader_close`. With `passes` NULL an interlaced file is refused; otherwise an Adam7 file
/// of up to 8 bits a sample is read in `*passes` (7) passes over every row, which must all go into one
/// image (each pass fills in its own pixels and leaves the others), and `*passes` is 1 for any other.
/// On `CPNG_READER_READY`, `*reader` is set and `*width`, `*height` and `*has_alpha` (an alpha channel
/// or a tRNS chunk) describe the rows; otherwise `*reader` is NULL and, on failure, `message` (200
/// bytes) says why.
cpng_reader_status cpng_reader_open(const unsigned char *bytes, size_t count, cpng_reader **reader,
                                    unsigned *width, unsigned *height, int *has_alpha, int *passes,
                                    char *message);

/// Reads the chunks before the image data of a 16-bit PNG, as `cpng_reader_open` does, for rows of 16-bit
/// RGBA samples as stored: native byte order, straight alpha (tRNS made alpha, gray widened, opaque images
/// given alpha 65535), no gamma applied. Any gamma and any interlace is read; an Adam7 file in `*passes`
/// (7) passes over every row of one image, as `cpng_reader_open` reads it. `*gamma` is the file's gamma
/// times 100000 as the simplified API takes it: an sRGB chunk's 45455, else a gAMA chunk's value, else
/// sRGB's 45455. A file of fewer bits a sample is `CPNG_READER_NEEDS_WHOLE_IMAGE`. Rows go through
/// `cpng_reader_read_rows`, each `width * 8` bytes.
cpng_reader_status cpng_reader_open_16(const unsigned char *bytes, size_t count, cpng_reader **reader,
                                       unsigned *width, unsigned *height, int *passes, int *gamma, char *message);

/// Writes the next `count` rows, each `width * 4` bytes (`width * 8` from `cpng_reader_open_16`), `stride`
/// bytes apart from `rows` on (in a later pass of an interlaced file, over the same rows of the image
/// again). Returns 0, or -1 when libpng fails: then the reader's message says why and no more rows come.
int cpng_reader_read_rows(cpng_reader *reader, unsigned char *rows, size_t stride, unsigned count);

/// The error message of the last failure (empty when none).
const char *cpng_reader_message(const cpng_reader *reader);

/// Frees the reader.
void cpng_reader_close(cpng_reader *reader);

/// The ICC profile of the PNG in the `count` bytes at `bytes` (its iCCP chunk, inflated and checked by
/// libpng), in `*profile` (free with `cpng_free`) and `*length`. Returns 1 with a profile, 0 when the
/// file has none, -1 when libpng fails before the image data.
int cpng_read_icc_profile(const unsigned char *bytes, size_t count, unsigned char **profile, size_t *length);

#endif
