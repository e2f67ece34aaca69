// libFuzzer's driver entry point (compiler-rt's FuzzerInterface.h). It exists only in a build
// linked with `-sanitize=fuzzer`; FuzzSupport calls it only under `#if FUZZING`.
#ifndef CAST2MQTT_CFUZZER_H
#define CAST2MQTT_CFUZZER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
