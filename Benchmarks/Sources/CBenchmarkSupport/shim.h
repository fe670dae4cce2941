#include <sys/types.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/// The folder at `path` opened as the base of `*at` calls (O_PATH); -1 on failure.
static inline int bench_open_directory(const char *path) {
    return open(path, 010000000 | O_DIRECTORY | O_CLOEXEC);
}

/// getxattrat(2) (Linux 6.13) on `file` in `directory`, not following a link: the attribute's
/// length, or -1 with errno set (ENOSYS on an older kernel).
static inline ssize_t bench_lgetxattrat(int directory, const char *file, const char *name, void *value, size_t size) {
    struct { uint64_t value; uint32_t size; uint32_t flags; } arguments = {(uint64_t)(uintptr_t)value, (uint32_t)size, 0};
    return (ssize_t)syscall(464, directory, file, AT_SYMLINK_NOFOLLOW, name, &arguments, sizeof arguments);
}
