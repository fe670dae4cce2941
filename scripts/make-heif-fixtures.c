/* Writes the HEIF and AVIF test fixtures (Tests/AsyncImageCacheTests/Fixtures/heif) with libheif's
 * own encoders (x265 for HEVC, libaom for AV1), from a picture drawn here, so they belong to the
 * project. scripts/make-heif-fixtures builds and runs it; the files are committed, so the tests never
 * encode. Usage: make-heif-fixtures OUTPUT_FOLDER DISPLAY_P3_ICC_FILE */
#include <libheif/heif.h>
#include <png.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 96, HEIGHT = 64 };

/* Smooth colour, two discs and fine texture: something a codec has to work on, the same every run. */
static void draw(unsigned char *rgba, int with_alpha) {
    unsigned state = 12345;
    for (int y = 0; y < HEIGHT; y++) {
        for (int x = 0; x < WIDTH; x++) {
            unsigned char *p = rgba + (y * WIDTH + x) * 4;
            double r = 40 + 170.0 * x / WIDTH, g = 60 + 150.0 * y / HEIGHT, b = 200 - 120.0 * x / WIDTH;
            double d1 = hypot(x - 30, y - 28), d2 = hypot(x - 70, y - 40);
            if (d1 < 14) { r = 230; g = 70; b = 50; }
            if (d2 < 11) { r = 30; g = 160; b = 90; }
            state = state * 1103515245u + 12345u;
            double noise = (double)((state >> 16) % 9) - 4;
            p[0] = (unsigned char)fmin(255, fmax(0, r + noise));
            p[1] = (unsigned char)fmin(255, fmax(0, g + noise));
            p[2] = (unsigned char)fmin(255, fmax(0, b + noise));
            p[3] = with_alpha ? (unsigned char)(255.0 * x / (WIDTH - 1)) : 255;
        }
    }
}

static void check(struct heif_error error, const char *what) {
    if (error.code != heif_error_Ok) {
        fprintf(stderr, "%s: %s\n", what, error.message);
        exit(1);
    }
}

static void write_png_sized(const char *folder, const char *name, const unsigned char *rgba, int width,
                            int height, int stride) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    image.format = PNG_FORMAT_RGBA;
    if (!png_image_write_to_file(&image, path, 0, rgba, stride, NULL)) {
        fprintf(stderr, "%s: %s\n", path, image.message);
        exit(1);
    }
}

static void write_png(const char *folder, const char *name, const unsigned char *rgba) {
    write_png_sized(folder, name, rgba, WIDTH, HEIGHT, 0);
}

/* Encodes `image` at quality 90 (with a thumbnail `thumbnail_size` wide, when positive), writes it to
 * FOLDER/NAME and releases it. */
static void encode_and_write(const char *folder, const char *name, struct heif_image *image,
                             enum heif_compression_format format, enum heif_orientation orientation,
                             int thumbnail_size, int macos_workaround) {
    struct heif_context *context = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    check(heif_context_get_encoder_for_format(context, format, &encoder), "encoder");
    check(heif_encoder_set_lossy_quality(encoder, 90), "quality");
    struct heif_encoding_options *options = heif_encoding_options_alloc();
    options->image_orientation = orientation;
    options->macOS_compatibility_workaround = (uint8_t)macos_workaround;
    struct heif_image_handle *handle = NULL;
    check(heif_context_encode_image(context, image, encoder, options, &handle), "encode");
    if (thumbnail_size > 0) {
        struct heif_image_handle *thumbnail = NULL;
        check(heif_context_encode_thumbnail(context, image, handle, encoder, options, thumbnail_size, &thumbnail),
              "thumbnail");
        heif_image_handle_release(thumbnail);
    }
    heif_image_handle_release(handle);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    check(heif_context_write_to_file(context, path), "write");
    heif_encoding_options_free(options);
    heif_encoder_release(encoder);
    heif_context_free(context);
    heif_image_release(image);
}

/* The `width` x `height` piece of `rgba` (WIDTH x HEIGHT, 4 bytes a pixel) from (`left`, `top`) as a
 * libheif image, RGB or, `with_alpha`, RGBA. */
static struct heif_image *new_image(const unsigned char *rgba, int left, int top, int width, int height,
                                    int with_alpha) {
    struct heif_image *image = NULL;
    enum heif_chroma chroma = with_alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB;
    check(heif_image_create(width, height, heif_colorspace_RGB, chroma, &image), "create");
    check(heif_image_add_plane(image, heif_channel_interleaved, width, height, 8), "plane");
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    int channels = with_alpha ? 4 : 3;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            memcpy(plane + y * stride + x * channels, rgba + ((y + top) * WIDTH + x + left) * 4, channels);
        }
    }
    return image;
}

static void write_heif(const char *folder, const char *name, enum heif_compression_format format,
                       const unsigned char *rgba, int with_alpha, enum heif_orientation orientation,
                       const unsigned char *icc, size_t icc_size, int thumbnail_size, int p3_nclx,
                       int macos_workaround) {
    struct heif_image *image = new_image(rgba, 0, 0, WIDTH, HEIGHT, with_alpha);
    if (icc != NULL) {
        check(heif_image_set_raw_color_profile(image, "prof", icc, icc_size), "profile");
    }
    if (p3_nclx) {
        // Display P3 as AVIF encoders describe it: P3 primaries, sRGB's transfer, BT.601 matrix, full range.
        struct heif_color_profile_nclx *nclx = heif_nclx_color_profile_alloc();
        heif_nclx_color_profile_set_color_primaries(nclx, 12);
        heif_nclx_color_profile_set_transfer_characteristics(nclx, 13);
        heif_nclx_color_profile_set_matrix_coefficients(nclx, 6);
        nclx->full_range_flag = 1;
        check(heif_image_set_nclx_color_profile(image, nclx), "nclx");
        heif_nclx_color_profile_free(nclx);
    }
    encode_and_write(folder, name, image, format, orientation, thumbnail_size, macos_workaround);
}

/* `rgba` (WIDTH x HEIGHT) as 10-bit RGBA HEVC, each sample scaled to 0...1023, turned for display as
 * `orientation` says. */
static void write_ten_bit_heif(const char *folder, const char *name, const unsigned char *rgba,
                               enum heif_orientation orientation) {
    struct heif_image *image = NULL;
    check(heif_image_create(WIDTH, HEIGHT, heif_colorspace_RGB, heif_chroma_interleaved_RRGGBBAA_LE, &image),
          "create");
    check(heif_image_add_plane(image, heif_channel_interleaved, WIDTH, HEIGHT, 10), "plane");
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    for (int y = 0; y < HEIGHT; y++) {
        for (int x = 0; x < WIDTH * 4; x++) {
            unsigned value = rgba[y * WIDTH * 4 + x] * 1023u / 255u;
            plane[y * stride + x * 2] = (uint8_t)(value & 0xFF);
            plane[y * stride + x * 2 + 1] = (uint8_t)(value >> 8);
        }
    }
    encode_and_write(folder, name, image, heif_compression_HEVC, orientation, 0, 1);
}

/* The luma of `rgba` (WIDTH x HEIGHT, BT.601 weights) as monochrome HEVC, with `icc` as its `prof`. */
static void write_gray_heif(const char *folder, const char *name, const unsigned char *rgba, const unsigned char *icc,
                            size_t icc_size) {
    struct heif_image *image = NULL;
    check(heif_image_create(WIDTH, HEIGHT, heif_colorspace_monochrome, heif_chroma_monochrome, &image), "create");
    check(heif_image_add_plane(image, heif_channel_Y, WIDTH, HEIGHT, 8), "plane");
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_Y, &stride);
    for (int y = 0; y < HEIGHT; y++) {
        for (int x = 0; x < WIDTH; x++) {
            const unsigned char *pixel = rgba + (y * WIDTH + x) * 4;
            plane[y * stride + x] = (uint8_t)((299 * pixel[0] + 587 * pixel[1] + 114 * pixel[2] + 500) / 1000);
        }
    }
    if (icc != NULL) check(heif_image_set_raw_color_profile(image, "prof", icc, icc_size), "profile");
    encode_and_write(folder, name, image, heif_compression_HEVC, heif_orientation_normal, 0, 1);
}

/* Opens FOLDER/NAME for reading and writing in place and reads up to 64 KB of it into `bytes`. */
static FILE *open_fixture(const char *folder, const char *name, unsigned char bytes[65536], size_t *count) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *file = fopen(path, "r+b");
    if (file == NULL) {
        perror(path);
        exit(1);
    }
    *count = fread(bytes, 1, 65536, file);
    return file;
}

/* libheif 1.15 writes the `ispe` of an image it encodes with a quarter-turn orientation (and of its
 * thumbnail) after the rotation, where ISO/IEC 23008-12 wants the size of the coded image, before
 * `irot`; Apple's files follow the standard. This swaps the two numbers of every `ispe` back (same
 * length, so no offset moves); a square one, a grid tile's, stays as it is either way. */
static void fix_rotated_extent(const char *folder, const char *name) {
    unsigned char bytes[65536];
    size_t count = 0;
    FILE *file = open_fixture(folder, name, bytes, &count);
    for (size_t i = 4; i + 16 <= count; i++) {
        if (memcmp(bytes + i, "ispe", 4) == 0) {
            unsigned char swapped[8];
            memcpy(swapped, bytes + i + 12, 4);
            memcpy(swapped + 4, bytes + i + 8, 4);
            fseek(file, (long)(i + 8), SEEK_SET);
            fwrite(swapped, 1, 8, file);
        }
    }
    fclose(file);
}

/* A CROP_WIDTH x CROP_HEIGHT piece of `rgba` from (CROP_X, CROP_Y), as HEVC without libheif's macOS
 * workaround: the codec's picture is padded to whole coding blocks and a `clap` box crops it back,
 * as libheif-based encoders write odd sizes. */
enum { CROP_X = 3, CROP_Y = 2, CROP_WIDTH = 90, CROP_HEIGHT = 60 };

static void write_cropped_heif(const char *folder, const char *name, const unsigned char *rgba,
                               enum heif_orientation orientation) {
    struct heif_image *image = new_image(rgba, CROP_X, CROP_Y, CROP_WIDTH, CROP_HEIGHT, 0);
    encode_and_write(folder, name, image, heif_compression_HEVC, orientation, 0, 0);
}

/* The quadrant `index` (0 to 3, row by row) of `rgba` as HEVC, WIDTH/2 x HEIGHT/2: the tiles
 * make-heif-derived.py joins into a grid, written to FOLDER/grid-tile-INDEX.heic and removed by it. */
static void write_grid_tile(const char *folder, const unsigned char *rgba, int index) {
    const int width = WIDTH / 2, height = HEIGHT / 2;
    const int left = index % 2 * width, top = index / 2 * height;
    struct heif_image *image = new_image(rgba, left, top, width, height, 0);
    char name[64];
    snprintf(name, sizeof name, "grid-tile-%d.heic", index);
    encode_and_write(folder, name, image, heif_compression_HEVC, heif_orientation_normal, 0, 0);
}

/* Overwrites the eight numbers of the file's `clap` box (same length, so no offset moves): width,
 * height, horizontal and vertical offset of the clean aperture, each a numerator and a denominator. */
static void set_clean_aperture(const char *folder, const char *name, const int values[8]) {
    unsigned char bytes[65536];
    size_t count = 0;
    FILE *file = open_fixture(folder, name, bytes, &count);
    size_t at = 0;
    for (size_t i = 4; i + 36 <= count && at == 0; i++) {
        if (memcmp(bytes + i, "clap", 4) == 0) at = i + 4;
    }
    if (at == 0) {
        fprintf(stderr, "%s/%s: no clap box\n", folder, name);
        exit(1);
    }
    unsigned char field[32];
    for (int index = 0; index < 8; index++) {
        unsigned value = (unsigned)values[index];
        field[index * 4] = (unsigned char)(value >> 24);
        field[index * 4 + 1] = (unsigned char)(value >> 16);
        field[index * 4 + 2] = (unsigned char)(value >> 8);
        field[index * 4 + 3] = (unsigned char)value;
    }
    fseek(file, (long)at, SEEK_SET);
    fwrite(field, 1, sizeof field, file);
    fclose(file);
}

/* The primary image of `heif_name` as libheif itself shows it, every transformation applied (clap, then
 * irot and imir), written as a PNG: what the decoder's own crop and the store's turn must reproduce. */
static void write_transformed_png(const char *folder, const char *heif_name, const char *png_name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, heif_name);
    struct heif_context *context = heif_context_alloc();
    check(heif_context_read_from_file(context, path, NULL), "read");
    struct heif_image_handle *handle = NULL;
    check(heif_context_get_primary_image_handle(context, &handle), "primary");
    struct heif_image *image = NULL;
    check(heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, NULL), "decode");
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    write_png_sized(folder, png_name, plane, heif_image_get_primary_width(image),
                    heif_image_get_primary_height(image), stride);
    heif_image_release(image);
    heif_image_handle_release(handle);
    heif_context_free(context);
}

/* The square picture of the thumbnail fixtures: the top left 64x64 of the usual one. */
enum { SIDE = 64 };

static struct heif_encoder *hevc_encoder(struct heif_context *context) {
    struct heif_encoder *encoder = NULL;
    check(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder), "encoder");
    check(heif_encoder_set_lossy_quality(encoder, 90), "quality");
    return encoder;
}

static void write_context(struct heif_context *context, const char *folder, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    check(heif_context_write_to_file(context, path), "write");
}

/* The files of Fixtures/heif-thumbnails: thumbnails that may not stand in for their primary image. */
static void write_thumbnail_choice_fixtures(const char *folder, const unsigned char *opaque,
                                            const unsigned char *translucent) {
    /* 1. alpha-opaque-thumbnail.heic: source-alpha.png as HEVC with alpha, and a 48x32 thumbnail made
     * from the same picture without its alpha plane (a thumbnail need not have one). */
    struct heif_context *context = heif_context_alloc();
    struct heif_encoder *encoder = hevc_encoder(context);
    struct heif_encoding_options *options = heif_encoding_options_alloc();
    struct heif_image_handle *handle = NULL, *thumbnail = NULL;
    check(heif_context_encode_image(context, new_image(translucent, 0, 0, WIDTH, HEIGHT, 1), encoder, options,
                                    &handle), "encode");
    check(heif_context_encode_thumbnail(context, new_image(translucent, 0, 0, WIDTH, HEIGHT, 0), handle, encoder,
                                        options, 48, &thumbnail), "thumbnail");
    write_context(context, folder, "alpha-opaque-thumbnail.heic");
    heif_context_free(context);

    /* 2. square-rotated-6-upright-thumbnail.heic: the top left 64x64 of source.png coded as is with an irot
     * for EXIF orientation 6, and a 32x32 thumbnail coded from the picture as shown (turned a quarter
     * clockwise), so without an irot of its own. */
    static unsigned char square[SIDE * SIDE * 4], turned[SIDE * SIDE * 4];
    for (int y = 0; y < SIDE; y++) memcpy(square + y * SIDE * 4, opaque + y * WIDTH * 4, SIDE * 4);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            memcpy(turned + (x * SIDE + (SIDE - 1 - y)) * 4, square + (y * SIDE + x) * 4, 4);
    write_png_sized(folder, "square-source.png", square, SIDE, SIDE, 0);
    context = heif_context_alloc();
    encoder = hevc_encoder(context);
    struct heif_encoding_options *rotated = heif_encoding_options_alloc();
    rotated->image_orientation = heif_orientation_rotate_90_cw;
    struct heif_image *image = NULL, *upright = NULL;
    check(heif_image_create(SIDE, SIDE, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image), "create");
    check(heif_image_create(SIDE, SIDE, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &upright), "create");
    check(heif_image_add_plane(image, heif_channel_interleaved, SIDE, SIDE, 8), "plane");
    check(heif_image_add_plane(upright, heif_channel_interleaved, SIDE, SIDE, 8), "plane");
    int stride = 0, upright_stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    uint8_t *upright_plane = heif_image_get_plane(upright, heif_channel_interleaved, &upright_stride);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            memcpy(plane + y * stride + x * 3, square + (y * SIDE + x) * 4, 3);
            memcpy(upright_plane + y * upright_stride + x * 3, turned + (y * SIDE + x) * 4, 3);
        }
    check(heif_context_encode_image(context, image, encoder, rotated, &handle), "encode");
    check(heif_context_encode_thumbnail(context, upright, handle, encoder, options, 32, &thumbnail), "thumbnail");
    write_context(context, folder, "square-rotated-6-upright-thumbnail.heic");
    heif_context_free(context);
}

/* Reads the profile at `path` into `bytes` (up to 64 KB); 0, with the reason printed, when it cannot. */
static int read_profile(const char *path, unsigned char bytes[65536], size_t *count) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        perror(path);
        return 0;
    }
    *count = fread(bytes, 1, 65536, file);
    fclose(file);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: make-heif-fixtures OUTPUT_FOLDER DISPLAY_P3_ICC_FILE THUMBNAIL_FIXTURES_FOLDER "
                        "GRAY_ICC_FILE\n");
        return 2;
    }
    const char *folder = argv[1];
    static unsigned char icc[65536], gray_icc[65536];
    size_t icc_size = 0, gray_icc_size = 0;
    if (!read_profile(argv[2], icc, &icc_size) || !read_profile(argv[4], gray_icc, &gray_icc_size)) return 1;
    heif_init(NULL);
    unsigned char opaque[WIDTH * HEIGHT * 4], translucent[WIDTH * HEIGHT * 4];
    draw(opaque, 0);
    draw(translucent, 1);
    write_png(folder, "source.png", opaque);
    write_png(folder, "source-alpha.png", translucent);
    write_heif(folder, "photo.heic", heif_compression_HEVC, opaque, 0, heif_orientation_normal, NULL, 0, 0, 0, 1);
    write_heif(folder, "photo.avif", heif_compression_AV1, opaque, 0, heif_orientation_normal, NULL, 0, 0, 0, 1);
    write_heif(folder, "alpha.avif", heif_compression_AV1, translucent, 1, heif_orientation_normal, NULL, 0, 0, 0, 1);
    write_heif(folder, "rotated-6.heic", heif_compression_HEVC, opaque, 0, heif_orientation_rotate_90_cw, NULL, 0, 0, 0, 1);
    fix_rotated_extent(folder, "rotated-6.heic");
    write_heif(folder, "display-p3.heic", heif_compression_HEVC, opaque, 0, heif_orientation_normal, icc, icc_size, 0, 0, 1);
    write_heif(folder, "display-p3-nclx.avif", heif_compression_AV1, opaque, 0, heif_orientation_normal, NULL, 0, 0, 1, 1);
    write_heif(folder, "thumbnail.heic", heif_compression_HEVC, opaque, 0, heif_orientation_normal, NULL, 0, 48, 0, 1);
    write_heif(folder, "thumbnail.avif", heif_compression_AV1, opaque, 0, heif_orientation_normal, NULL, 0, 48, 0, 1);
    write_heif(folder, "rotated-6-thumbnail.heic", heif_compression_HEVC, opaque, 0, heif_orientation_rotate_90_cw,
               NULL, 0, 48, 0, 1);
    fix_rotated_extent(folder, "rotated-6-thumbnail.heic");
    write_cropped_heif(folder, "cropped.heic", opaque, heif_orientation_normal);
    /* 70x40 from (16, 10) of the coded picture, with offsets in halves: 12/2 right of centre, -4/2 up. */
    const int inner[8] = {70, 1, 80, 2, 12, 2, -4, 2};
    write_cropped_heif(folder, "cropped-offset.heic", opaque, heif_orientation_normal);
    set_clean_aperture(folder, "cropped-offset.heic", inner);
    write_cropped_heif(folder, "cropped-offset-rotated-6.heic", opaque, heif_orientation_rotate_90_cw);
    fix_rotated_extent(folder, "cropped-offset-rotated-6.heic");
    set_clean_aperture(folder, "cropped-offset-rotated-6.heic", inner);
    /* Half-pixel edges: the first column rounds toward zero (20.5 to 20), the first row half up (16.5 to 17). */
    const int halves[8] = {50, 1, 31, 1, 1, 2, 0, 1};
    write_cropped_heif(folder, "cropped-halves.heic", opaque, heif_orientation_normal);
    set_clean_aperture(folder, "cropped-halves.heic", halves);
    /* A left edge at -0.5, which libheif rounds toward zero, to column 0 (not -1): 80 columns. */
    const int left_edge[8] = {80, 1, 10, 1, -11, 2, 0, 1};
    write_cropped_heif(folder, "cropped-left-edge.heic", opaque, heif_orientation_normal);
    set_clean_aperture(folder, "cropped-left-edge.heic", left_edge);
    /* The photo whole, its 48x32 thumbnail coded padded (64x64) with a clap of its own. */
    write_heif(folder, "thumbnail-cropped.heic", heif_compression_HEVC, opaque, 0, heif_orientation_normal, NULL, 0,
               48, 0, 0);
    for (int index = 0; index < 4; index++) write_grid_tile(folder, opaque, index);
    write_transformed_png(folder, "cropped.heic", "cropped.libheif.png");
    write_transformed_png(folder, "cropped-halves.heic", "cropped-halves.libheif.png");
    write_transformed_png(folder, "cropped-left-edge.heic", "cropped-left-edge.libheif.png");
    write_transformed_png(folder, "cropped-offset.heic", "cropped-offset.libheif.png");
    write_transformed_png(folder, "cropped-offset-rotated-6.heic", "cropped-offset-rotated-6.libheif.png");
    write_thumbnail_choice_fixtures(argv[3], opaque, translucent);
    /* 10 bits a sample, with alpha: upright, and turned as rotated-6.heic (libheif puts the irot on the alpha
     * item too). */
    /* A quarter turn as libheif 1.15 writes it, its ispe after the turn (not swapped back): AV1, and HEVC
     * of odd sides (95x63), which libheif writes as a grid of one tile. */
    write_heif(folder, "rotated-6-extent-turned.avif", heif_compression_AV1, opaque, 0, heif_orientation_rotate_90_cw,
               NULL, 0, 0, 0, 1);
    encode_and_write(folder, "odd-rotated-6-extent-turned.heic", new_image(opaque, 0, 0, WIDTH - 1, HEIGHT - 1, 0),
                     heif_compression_HEVC, heif_orientation_rotate_90_cw, 0, 1);
    /* Monochrome, with a gray profile of gamma 1.8 (../icc/gray-gamma-1.8.icc) and without. */
    write_gray_heif(folder, "gray-gamma-1.8.heic", opaque, gray_icc, gray_icc_size);
    write_gray_heif(folder, "gray.heic", opaque, NULL, 0);
    write_ten_bit_heif(folder, "alpha-10-bit.heic", translucent, heif_orientation_normal);
    write_ten_bit_heif(folder, "alpha-10-bit-rotated-6.heic", translucent, heif_orientation_rotate_90_cw);
    fix_rotated_extent(folder, "alpha-10-bit-rotated-6.heic");
    heif_deinit();
    return 0;
}
