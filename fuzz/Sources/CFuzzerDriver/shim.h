#ifndef CFUZZERDRIVER_SHIM_H
#define CFUZZERDRIVER_SHIM_H
#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver, for a target that has a main of its own (libclang_rt.fuzzer_no_main, linked
// only by `make fuzz`): it parses libFuzzer's flags from argv and calls `callback` with each input.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
