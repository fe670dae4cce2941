/* Empty: the target exists for its header; LLVMFuzzerRunDriver lives in the libFuzzer runtime. */
