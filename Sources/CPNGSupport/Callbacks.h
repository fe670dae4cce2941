#ifndef CPNG_CALLBACKS_H
#define CPNG_CALLBACKS_H

#include <stdio.h>

#include <png.h>

/* The size of the message buffers the wrappers keep (cpng_encoded's, and the states' below). */
#define CPNG_MESSAGE_SIZE 200

/* libpng's error callback for the wrappers: the error pointer given to png_create_*_struct is a
 * CPNG_MESSAGE_SIZE-byte buffer, which receives the message before the jump back to png_jmpbuf. */
static inline void cpng_record_error(png_structp png, png_const_charp message) {
    char *buffer = png_get_error_ptr(png);
    snprintf(buffer, CPNG_MESSAGE_SIZE, "%s", message);
    png_longjmp(png, 1);
}

/* Warnings are dropped: the callers report what failed, not what libpng tolerated. */
static inline void cpng_ignore_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

#endif
