// libFuzzer's entry for programs that have a main of their own (SwiftPM gives every Linux
// executable one): it parses libFuzzer's flags from argv and runs `callback` on every input.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
