#include <sys/types.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/// Opens the directory at `path` for use as the base of `*at` calls only (`O_PATH`, which glibc
/// names only under `_GNU_SOURCE`): no read permission needed, nothing read. -1 with `errno` set
/// on failure.
static inline int cxattr_open_directory(const char *path) {
#ifdef O_PATH
    int flags = O_PATH;
#else
    int flags = 010000000;  // O_PATH on every Linux architecture but alpha, parisc and sparc
#endif
    return open(path, flags | O_DIRECTORY | O_CLOEXEC);
}

/// `getxattrat(2)` (Linux 6.13; glibc has no wrapper yet): reads the attribute `name` of the file
/// `file`, named relative to the directory `directory`, into `value`, without following a symbolic
/// link. Returns the attribute's length, or -1 with `errno` set (`ENOSYS` on older kernels).
static inline ssize_t cxattr_lgetxattrat(
    int directory, const char *file, const char *name, void *value, size_t size
) {
    // struct xattr_args of <linux/xattr.h>, which older kernel headers lack.
    struct {
        uint64_t value;
        uint32_t size;
        uint32_t flags;
    } arguments = {(uint64_t)(uintptr_t)value, (uint32_t)size, 0};
    // 464 on every architecture: the numbers from 403 on are shared.
    return (ssize_t)syscall(464, directory, file, AT_SYMLINK_NOFOLLOW, name, &arguments, sizeof arguments);
}
