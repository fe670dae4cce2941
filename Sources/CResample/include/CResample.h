#ifndef CRESAMPLE_H
#define CRESAMPLE_H

#include <stdint.h>

/// The fixed-point weights that resample one axis of 8-bit RGBA pixels: each target sample is a
/// weighted sum of `taps` consecutive source samples, in integers, rounded and clamped to 0...255.
/// Built from floating-point weights; see `cresample_axis_create`.
typedef struct cresample_axis cresample_axis;

/// Quantizes `weights` (`taps` per target sample, target sample `i` reading source samples
/// `starts[i] ..< starts[i] + taps`, every window inside `0 ..< source_count`) to fixed point, with
/// each sample's weights summing exactly to one. Returns NULL when out of memory or when the
/// arguments are inconsistent.
cresample_axis *cresample_axis_create(int source_count, int target_count, int taps, const int32_t *starts,
                                      const float *weights);

void cresample_axis_destroy(cresample_axis *axis);

/// Resamples one row of `source_count` RGBA pixels into `target_count` RGBA pixels.
void cresample_row(const cresample_axis *axis, const uint8_t *source, uint8_t *target);

/// Sums the rows of target row `y` into `target` (`width` RGBA pixels): `rows[t]` is source row
/// `starts[y] + t` of the `starts` the axis was made with, for each of its `taps` taps.
void cresample_column(const cresample_axis *axis, int y, const uint8_t *const *rows, uint8_t *target, int width);

/// Whether the processor runs vector kernels (SSE2 or AVX2 on x86-64), whatever level is set: without
/// them the plain C kernels are slower than resampling in floating point, so callers should prefer that.
int cresample_has_vector_kernels(void);

/// Which instructions the kernels use: 0 plain C, 1 SSE2, 2 AVX2. `cresample_set_level` lowers the
/// level for the calling process (tests compare the levels); it returns the level now in use.
int cresample_level(void);
int cresample_set_level(int level);

#endif
