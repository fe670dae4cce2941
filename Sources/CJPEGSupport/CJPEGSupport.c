#include "CJPEGSupport.h"
int cjpeg_support_version(void) { return 1; }
