// libuv from Debian's libuv1-dev: the C peer of LoopKit's UDP echo (UVUDPEchoPeer).
#include <uv.h>
