// libwebp's encoder, for tests that make their own WebP files (the package itself only decodes).
#include <webp/encode.h>
