#ifndef CJPEGSUPPORT_DECODER_H
#define CJPEGSUPPORT_DECODER_H

/* The decoder handle, shared by the libjpeg wrapper and the DC-only decoder (not part of the module). */

#include <setjmp.h>
#include <stdio.h>

#include <jpeglib.h>

#include "CJPEGSupport.h"

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    cjpeg_status failure;
    int saw_premature_end;
    /* The data ran out where its EOI marker would be (libjpeg goes on with the one its source supplies). */
    int ran_out;
    /* The MCUs libjpeg may still fill with zeros after damaged restart intervals (see guarded_emit_message). */
    long restart_fill_left;
    int has_message;
    char message[JMSG_LENGTH_MAX];
} guarded_error;

struct cjpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    guarded_error error;
    /* The data the memory source reads, for a look at how it ends once libjpeg runs out of it. */
    const unsigned char *bytes;
    size_t count;
    /* Whether the data, which has no EOI marker, ends where the marker would be (see
       ends_where_end_of_image_would_be): 0 until libjpeg runs out of data, then 1 or -1. */
    int ends_without_end_of_image;
    int has_header;
    int has_decoded;
    /* Between jpeg_start_decompress and the last row. */
    int is_started;
    /* When set, CMYK and YCCK rows go to it as ink instead of through the built-in conversion. */
    cjpeg_ink_transform ink_transform;
    void *ink_transform_context;
    /* libjpeg's progress monitor, installed with the header: it stops the decode past CJPEG_MAX_SCANS
       scans and, when `cancel_flag` is set, once the int it points at is non-zero. */
    struct jpeg_progress_mgr progress;
    const int *cancel_flag;
};

/* Whether the decoder's cancel flag is raised. */
static inline int cjpeg_decoder_is_cancelled(const struct cjpeg_decoder *decoder) {
    return decoder->cancel_flag != NULL && __atomic_load_n(decoder->cancel_flag, __ATOMIC_RELAXED) != 0;
}

#endif
