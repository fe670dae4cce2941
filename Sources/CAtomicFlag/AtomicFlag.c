#include "CAtomicFlag.h"

void catomic_flag_raise(int *flag) {
    __atomic_store_n(flag, 1, __ATOMIC_RELAXED);
}

int catomic_flag_is_raised(const int *flag) {
    return __atomic_load_n(flag, __ATOMIC_RELAXED);
}
