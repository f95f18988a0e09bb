# What both C examples share: building one main.c against loopkit.h and libLoopKitC.so.
#   make                   uses the library built in the repository (../../.build/debug)
#   make LOOPKIT_LIB=DIR   uses another build (e.g. ../../.build/release)
#   make PKG=1             uses an installed LoopKit through pkg-config (make install in the root)
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
