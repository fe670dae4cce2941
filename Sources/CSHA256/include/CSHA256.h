#ifndef CSHA256_H
#define CSHA256_H

#include <stddef.h>
#include <stdint.h>

/// SHA-256 (FIPS 180-4) of `count` bytes at `bytes`, as the eight 32-bit words of the final state
/// (the digest is their big-endian bytes). Uses the processor's SHA instructions where it has them
/// (x86-64 SHA extensions), else portable C. Cache file names are hashed on the size-lookup path.
void csha256_hash(const uint8_t *bytes, size_t count, uint32_t state[8]);

/// The same, always with the portable C rounds (for tests that compare the two).
void csha256_hash_portable(const uint8_t *bytes, size_t count, uint32_t state[8]);

/// Whether ``csha256_hash`` uses the processor's SHA instructions on this machine.
int csha256_is_accelerated(void);

#endif
