#ifndef CFUZZERDRIVER_H
#define CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/*
 * libFuzzer's driver, for a program that keeps its own main (see ImageFuzzer/main.swift).
 * Defined in the libFuzzer runtime that `-sanitize=fuzzer` links.
 */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
