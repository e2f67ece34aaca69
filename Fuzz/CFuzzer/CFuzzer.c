// Header-only target: SwiftPM needs one source file.
#include "CFuzzer.h"
