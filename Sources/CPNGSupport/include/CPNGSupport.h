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

#endif
