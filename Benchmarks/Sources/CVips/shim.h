// libvips, for the in-process reference of the thumbnail benchmark (Debian: libvips-dev).
#include <vips/vips.h>
