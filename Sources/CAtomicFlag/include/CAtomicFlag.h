#ifndef CATOMICFLAG_H
#define CATOMICFLAG_H

/// A flag that one thread raises and others poll, read and written atomically, for Swift on the
/// package's oldest platforms, which have no atomics of their own. Relaxed: the flag orders no other
/// memory, it only asks work to stop. C code that is handed the flag reads it with `__atomic_load_n`.

/// Raises the flag at `flag`.
void catomic_flag_raise(int *flag);

/// Whether the flag at `flag` is raised.
int catomic_flag_is_raised(const int *flag);

#endif
