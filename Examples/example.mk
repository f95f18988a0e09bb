# What both C examples share: building one main.c against loopkit.h and a LoopKit C library.
#   make                   uses libLoopKitC.so as built in the repository (../../.build/debug; make test-c)
#   make LOOPKIT_LIB=DIR   uses another build of it (e.g. ../../.build/release)
#   make PKG=1             uses an installed libloopkit.so.1 through pkg-config (make install or the
#                          libloopkit-dev package; make install-check points pkg-config at a scratch root)
# The including Makefile sets PROGRAM (the binary's name) first.

CC          ?= cc
CFLAGS      ?= -std=c11 -Wall -Wextra -Werror -O2
LOOPKIT_LIB ?= ../../.build/debug
LOOPKIT_INC ?= ../../Sources/CLoopKit/include

ifdef PKG
LOOPKIT_FLAGS = $(shell pkg-config --cflags --libs loopkit)
else
LOOPKIT_FLAGS = -I$(LOOPKIT_INC) -L$(LOOPKIT_LIB) -lLoopKitC -Wl,-rpath,$(abspath $(LOOPKIT_LIB))
endif

$(PROGRAM): main.c
	$(CC) $(CFLAGS) -D_GNU_SOURCE -o $@ main.c $(LOOPKIT_FLAGS) $(shell pkg-config --libs libevent) -lpthread

run: $(PROGRAM)
	./$(PROGRAM)

clean:
	rm -f $(PROGRAM)

.PHONY: run clean
