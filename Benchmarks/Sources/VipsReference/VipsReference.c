#include "VipsReference.h"

#include <vips/vips.h>

int vips_reference_start(void) {
    if (VIPS_INIT("aic-benchmarks")) {
        return -1;
    }
    // Repeated calls on the same file would otherwise be answered from the cache.
    vips_cache_set_max(0);
    return 0;
}

// Thumbnails are lazy; writing the pixels to memory runs the whole pipeline, as saving would.
static int finish(VipsImage *image, int *result_width, int *result_height) {
    size_t size = 0;
    void *pixels = vips_image_write_to_memory(image, &size);
    *result_width = vips_image_get_width(image);
    *result_height = vips_image_get_height(image);
    g_object_unref(image);
    if (pixels == NULL) {
        return -1;
    }
    g_free(pixels);
    return 0;
}

int vips_reference_thumbnail_file(const char *path, int width, int *result_width, int *result_height) {
    VipsImage *image = NULL;
    // The height limit is far beyond any photo, so the width alone sets the scale (as `--size Wx`).
    if (vips_thumbnail(path, &image, width, "height", VIPS_MAX_COORD, NULL)) {
        return -1;
    }
    return finish(image, result_width, result_height);
}

int vips_reference_thumbnail_buffer(const void *bytes, size_t count, int width, int *result_width,
                                    int *result_height) {
    VipsImage *image = NULL;
    if (vips_thumbnail_buffer((void *)bytes, count, &image, width, "height", VIPS_MAX_COORD, NULL)) {
        return -1;
    }
    return finish(image, result_width, result_height);
}

int vips_reference_jpeg_shrink_load(const char *path, int shrink, int *result_width, int *result_height) {
    VipsImage *image = NULL;
    if (vips_jpegload(path, &image, "shrink", shrink, NULL)) {
        return -1;
    }
    return finish(image, result_width, result_height);
}

int vips_reference_resize_after_shrink_load(const char *path, int shrink, int width, int *result_width,
                                            int *result_height) {
    VipsImage *loaded = NULL;
    if (vips_jpegload(path, &loaded, "shrink", shrink, NULL)) {
        return -1;
    }
    VipsImage *resized = NULL;
    double scale = (double)width / vips_image_get_width(loaded);
    int status = vips_resize(loaded, &resized, scale, "kernel", VIPS_KERNEL_LANCZOS3, NULL);
    g_object_unref(loaded);
    if (status) {
        return -1;
    }
    return finish(resized, result_width, result_height);
}

const char *vips_reference_error(void) {
    const char *message = vips_error_buffer();
    return message == NULL ? "" : message;
}
