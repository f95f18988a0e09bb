# LoopKit — the two commands a new user needs are `make demo` and `make test`.
# Each installs libevent-dev first when pkg-config cannot find it (apt-get, through sudo when not root).

SWIFT        ?= swift
PREFIX       ?= /usr/local
CONFIG       ?= debug
SUDO         := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := libevent-dev pkg-config

.PHONY: all deps demo test test-sanitize bench clean

all: test

## deps: install libevent-dev (and pkg-config) when they are missing
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libevent_pthreads; then \
		echo "==> libevent-dev not found: installing $(APT_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@pkg-config --exists libevent_pthreads && echo "==> libevent $$(pkg-config --modversion libevent)"

## demo: build LoopDemo in release mode and run the tour
demo: deps
	$(SWIFT) run -c release LoopDemo

## test: the whole suite (Swift Testing)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## test-sanitize: the whole suite under the thread sanitizer
test-sanitize: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

## bench: LoopKit against SwiftNIO, Dispatch and Foundation, same process, ratios printed
bench: deps
	cd Benchmarks && $(SWIFT) run -c release LoopKitBenchmarks

clean:
	rm -rf .build .build-tsan Benchmarks/.build
