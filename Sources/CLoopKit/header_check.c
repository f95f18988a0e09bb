/* Compiles loopkit.h as plain C, so every C host can include it. The functions are implemented in
 * Swift (Sources/LoopKitC) and exported from libLoopKitC.so. */
#include "loopkit.h"
