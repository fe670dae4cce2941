#ifndef VIPS_REFERENCE_H
#define VIPS_REFERENCE_H

/*
 * libvips's thumbnail calls behind plain C functions: vips_thumbnail() and friends are variadic,
 * which Swift cannot call, and their results are lazy until the pixels are written somewhere.
 */

#include <stddef.h>

/* Starts libvips and turns its operation cache off, so every call does the whole work. 0 on success. */
int vips_reference_start(void);

/* vips_thumbnail() of the file at `path` to `width` pixels wide, the pixels written to memory.
   Stores the result's size; returns 0 on success. */
int vips_reference_thumbnail_file(const char *path, int width, int *result_width, int *result_height);

/* The same from bytes already in memory (vips_thumbnail_buffer()). */
int vips_reference_thumbnail_buffer(const void *bytes, size_t count, int width, int *result_width,
                                    int *result_height);

/* jpegload of the file at `path` with `shrink` (1, 2, 4 or 8), the pixels written to memory: the decode
   alone that vips_thumbnail() starts with. */
int vips_reference_jpeg_shrink_load(const char *path, int shrink, int *result_width, int *result_height);

/* jpegload with `shrink` (1, 2, 4 or 8), then vips_resize() with Lanczos 3 (vips_thumbnail()'s kernel) to
   `width` pixels wide, the pixels written to memory: vips_thumbnail()'s steps at a decode scale chosen by the
   caller, where vips_thumbnail() itself keeps at least a 2x reduce after the decode. 0 on success. */
int vips_reference_resize_after_shrink_load(const char *path, int shrink, int width, int *result_width,
                                            int *result_height);

/* libvips's last error message; never NULL. */
const char *vips_reference_error(void);

#endif
