#include <sys/types.h>
#include <sys/xattr.h>
