# LoopKit — the two commands a new user needs are `make demo` and `make test`.
# Each installs libevent-dev, libssl-dev and zlib1g-dev first when pkg-config cannot find them (apt-get, through sudo when not root).

SWIFT        ?= swift
PREFIX       ?= /usr/local
CONFIG       ?= debug
SUDO         := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := libevent-dev libssl-dev zlib1g-dev libbrotli-dev libzstd-dev libnghttp2-dev libcurl4-openssl-dev nghttp2-client curl openssl pkg-config
BUILD_DIR    := .build/debug
C_TEST       := .build/c-tests/c_api_test
VALGRIND     := valgrind --quiet --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite --error-exitcode=1
INSTALL_CONFIG ?= release
# libdispatch as the toolchain ships it: the C tests queue blocks on the main queue the main loop runs.
SWIFT_USR      := $(shell dirname $$(dirname $$(readlink -f $$(command -v $(SWIFT)))))
DISPATCH_FLAGS := -L$(SWIFT_USR)/lib/swift/linux -ldispatch -Wl,-rpath,$(SWIFT_USR)/lib/swift/linux
# The toolchain's folder (/opt/swift for /opt/swift/usr/bin/swift), which install-check hides from the C hosts.
SWIFT_TOOLCHAIN := $(shell dirname $(SWIFT_USR))

# libloopkit.so.MAJOR, the self-contained C library (make lib): LoopKitC's release objects linked again with
# the Swift runtime and libdispatch inside (-static-stdlib), only loopkit.h's functions exported
# (Sources/CLoopKit/loopkit.map), no rpath. LK_VERSION_MAJOR is the soname's number and the package's.
LK_VERSION     := $(shell sed -n 's/^\#define LK_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' Sources/CLoopKit/include/loopkit.h | paste -sd.)
LK_MAJOR       := $(firstword $(subst ., ,$(LK_VERSION)))
LIB_DIR        := .build/libloopkit
LIB_SONAME     := libloopkit.so.$(LK_MAJOR)
LIB_FILE       := libloopkit.so.$(LK_VERSION)
SWIFTC         ?= $(SWIFT_USR)/bin/swiftc
# lld: gold leaves the version script's local Swift symbols in .dynsym. --as-needed: libevent_core, not all of
# libevent. pack-relative-relocs (DT_RELR, glibc 2.36): 0.6 MB of the 8.3 MB. libstdc++ (which the Swift runtime
# is written in) linked in too: the toolchain's static-stdlib-args.lnk asks for -lstdc++, found first in a folder
# holding only libstdc++.a; loading libstdc++.so and running its initialisers was 2.1M of a C host's 6.9M
# instructions at start-up (callgrind), for 74 KB more library. No -g: the C view of the ABI is the header's
# (Scripts/abi-stub.py).
LIB_STDCXX_DIR := $(LIB_DIR)/static-libstdc++
LIB_LDFLAGS    := -use-ld=lld -emit-library -static-stdlib -module-name LoopKitC -L$(CURDIR)/$(LIB_STDCXX_DIR) \
	-Xlinker --gc-sections -Xlinker --as-needed -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker -soname=$(LIB_SONAME) -Xlinker --version-script=$(CURDIR)/Sources/CLoopKit/loopkit.map
LIB_LIBS        = $$(pkg-config --libs-only-L libevent_pthreads) -levent_pthreads -levent_core
# The C test against libloopkit: the main loop runs libloopkit's own libdispatch, which nothing outside the
# library can reach, so the test's dispatch_async_f on the main queue is left out (LK_TEST_PRIVATE_DISPATCH).
C_TEST_LIB     := .build/c-tests/c_api_test-libloopkit
# Debian packages (make deb)
DEB_DIR        := .build/deb
DEB_ARCH       := $(shell dpkg --print-architecture 2>/dev/null)
DEB_MULTIARCH  := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

.PHONY: all deps demo test test-swift article-examples test-c test-release-client leak-check leak-check-tls install-check test-sanitize test-fuzz-corpus fuzz fuzz-build soak bench bench-core bench-callgrind bench-callgrind-http bench-callgrind-h2 bench-http bench-h2 bench-client bench-client-callgrind bench-compression bench-files bench-files-callgrind bench-https bench-ws bench-main bench-pool bench-udp bench-spawn bench-startup wrk docs install install-dynamic lib header-check abi-check abi-update deb clean

all: test

## deps: install libevent-dev, libssl-dev, zlib1g-dev, libbrotli-dev, libzstd-dev, libnghttp2-dev, libcurl4-openssl-dev
## (LoopKitHTTPClient), the openssl, nghttp and curl commands (the TLS and HTTP/2 tests' peers) and pkg-config when
## missing; Python's h2 (the HTTP/2 raw-frame tests), brotli and zstandard (the compression tests' decoders) through pip
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libevent_pthreads openssl zlib libbrotlienc libbrotlidec libzstd libnghttp2 libcurl || ! command -v openssl >/dev/null 2>&1 || ! command -v nghttp >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then \
		echo "==> a package of $(APT_PACKAGES) not found: installing them"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@python3 -c 'import h2, brotli, zstandard' 2>/dev/null || pip install -q h2 brotli zstandard 2>/dev/null || \
		pip install -q --break-system-packages h2 brotli zstandard || \
		{ $(SUDO) apt-get install -y -qq python3-pip && pip install -q --break-system-packages h2 brotli zstandard; }
	@pkg-config --exists libevent_pthreads && echo "==> libevent $$(pkg-config --modversion libevent), OpenSSL $$(pkg-config --modversion openssl), zlib $$(pkg-config --modversion zlib), Brotli $$(pkg-config --modversion libbrotlienc), zstd $$(pkg-config --modversion libzstd), nghttp2 $$(pkg-config --modversion libnghttp2), libcurl $$(pkg-config --modversion libcurl)"

## demo: build LoopDemo in release mode and run the tour
demo: deps
	$(SWIFT) run -c release LoopDemo

## test: the whole suite: Swift Testing, the C ABI tests and examples, the release-mode client, the leak
## check, loopkit.h as C99, C11 and C++17, the ABI against its baseline, the install check (the Debian
## packages installed into a scratch root, the C hosts run with the toolchain hidden), the fuzz targets
## over their checked-in corpora
test: test-swift test-c test-release-client leak-check leak-check-tls header-check abi-check install-check test-fuzz-corpus

test-swift: deps
	python3 Scripts/article-examples.py --check
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## article-examples: every ```swift block of the README and the DocC articles into Tests/ArticleExampleTests/Examples.swift,
## which the test build compiles (its @Test blocks run); test-swift fails when that file is stale
article-examples:
	python3 Scripts/article-examples.py

## test-c: the C ABI seen from C (every function, every error code, R1-R16) and the two C examples
test-c: deps
	$(SWIFT) build --product LoopKitC
	@mkdir -p $(dir $(C_TEST))
	$(CC) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o $(C_TEST) Tests/CLoopKitTests/c_api_test.c \
		-ISources/CLoopKit/include -L$(BUILD_DIR) -lLoopKitC -Wl,-rpath,$(CURDIR)/$(BUILD_DIR) \
		$$(pkg-config --libs libevent) $(DISPATCH_FLAGS) -lpthread
	./$(C_TEST)
	$(MAKE) -C Examples/c-host run
	$(MAKE) -C Examples/c-echo run

## test-release-client: a package of its own that uses LoopKit's public API, built as users ship it
## (`swift build -c release`, LoopKit's @inlinable code inlined into it) and run: pinned actors, LoopBound,
## executor preferences, perform and invoke across awaits (ReleaseClient, LoopKit only); an HTTP server on
## 127.0.0.1 with streamed request bodies, a WebSocket echo and a TCP echo, each read with `for await`
## (ReleaseHTTPClient, LoopKitNet and LoopKitHTTP)
test-release-client: deps
	cd Examples/release-client && $(SWIFT) build -c release
	Examples/release-client/.build/release/ReleaseClient
	Examples/release-client/.build/release/ReleaseHTTPClient

## leak-check: 1,000 create/run/destroy cycles and both examples under valgrind, 100 cycles against the release
## library under valgrind too, the C test under LeakSanitizer: no definite leaks, no uninitialised reads
leak-check: test-c
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	$(VALGRIND) ./$(C_TEST) --cycles 1000
	@# The library as users ship it (-c release): its optimised code reads memory a debug build never reads, so
	@# valgrind saw readdir's unfilled bytes in a recursive watch (issue 43, item 8) only here.
	$(SWIFT) build -c release --product LoopKitC
	$(CC) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o $(C_TEST)-release Tests/CLoopKitTests/c_api_test.c \
		-ISources/CLoopKit/include -L.build/release -lLoopKitC -Wl,-rpath,$(CURDIR)/.build/release \
		$$(pkg-config --libs libevent) $(DISPATCH_FLAGS) -lpthread
	$(VALGRIND) ./$(C_TEST)-release --cycles 100
	$(VALGRIND) Examples/c-host/host > /dev/null
	$(VALGRIND) Examples/c-echo/echo > /dev/null
	@# valgrind 3.19 does not know pidfd_open (syscall 434), so child processes run only here: the whole C test
	@# and 200 cycles (children among them) under LeakSanitizer
	$(CC) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -fsanitize=leak -g -o $(C_TEST)-lsan Tests/CLoopKitTests/c_api_test.c \
		-ISources/CLoopKit/include -L$(BUILD_DIR) -lLoopKitC -Wl,-rpath,$(CURDIR)/$(BUILD_DIR) \
		$$(pkg-config --libs libevent) $(DISPATCH_FLAGS) -lpthread
	./$(C_TEST)-lsan > /dev/null
	./$(C_TEST)-lsan --cycles 200
	@echo "==> leak check: no definite leaks"

## leak-check-tls: the TLS suites (10,000 handshakes, 400 bad ones, every refusal) under LeakSanitizer:
## no leak of LoopKit's or OpenSSL's (Tests/lsan.supp names the harness's own)
leak-check-tls: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp ASAN_OPTIONS=detect_leaks=1 \
		$(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --filter "TLSTests|TLSBadInputTests|HTTPSTests"
	@echo "==> TLS leak check: no leaks"

## test-sanitize: the whole suite under the thread sanitizer
test-sanitize: deps
	$(SWIFT) test --sanitize=thread -Xswiftc -DLOOPKIT_TSAN --scratch-path .build-tsan

## fuzz-build: the fuzz targets (Fuzz/, a package of their own), debug (Swift's overflow and bounds traps on),
## with libFuzzer and AddressSanitizer. One -sanitize=fuzzer,address for swiftc: SwiftPM passes its sanitizers
## in no fixed order, and with `-sanitize=address` last swiftc drops libFuzzer's coverage. UBSan: swiftc
## refuses -sanitize=undefined on Linux. One product at a time (a whole-package build also builds plugins).
FUZZ_TARGETS   ?= RequestParserFuzzer ChunkedBodyFuzzer WebSocketFrameFuzzer ServerSentEventFuzzer TLSServerFuzzer QueryAuthorityFuzzer CABIFuzzer
FUZZ_SECONDS   ?= 60
FUZZ_SANITIZE  := --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
FUZZ_BIN       := Fuzz/.build/debug
FUZZ_WORK      := Fuzz/.build/fuzz-work
# Swift's own backtracer would race libFuzzer's crash report (and can hang symbolicating): libFuzzer reports.
FUZZ_ENV       := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1
fuzz-build: deps
	cd Fuzz && for target in $(FUZZ_TARGETS); do $(SWIFT) build $(FUZZ_SANITIZE) --product $$target || exit 1; done

## test-fuzz-corpus: each fuzz target over its checked-in corpus (Fuzz/Corpus/<target>/), once: the
## regression inputs and seeds, in seconds, no mutation
test-fuzz-corpus: fuzz-build
	@mkdir -p $(FUZZ_WORK)
	@for target in $(FUZZ_TARGETS); do \
		echo "==> $$target: $$(ls Fuzz/Corpus/$$target | wc -l) corpus inputs"; \
		$(FUZZ_ENV) $(FUZZ_BIN)/$$target -runs=0 -artifact_prefix=$(FUZZ_WORK)/$$target- Fuzz/Corpus/$$target \
			> $(FUZZ_WORK)/$$target-corpus.log 2>&1; \
		status=$$?; grep -E "INITED|DONE" $(FUZZ_WORK)/$$target-corpus.log; \
		[ $$status -eq 0 ] || { tail -60 $(FUZZ_WORK)/$$target-corpus.log; echo "==> $$target failed on its corpus"; exit 1; }; \
	done
	@echo "==> fuzz corpora: clean"

## fuzz: each fuzz target for FUZZ_SECONDS (default 60) from its checked-in corpus, new inputs kept in
## Fuzz/.build/fuzz-work/<target>/ (not checked in), crashes in Fuzz/.build/fuzz-work/<target>-crash-*;
## the last lines give exec/s and coverage (cov: edges, ft: features)
fuzz: fuzz-build
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_WORK)/$$target; \
		echo "==> $$target: $(FUZZ_SECONDS) s"; \
		$(FUZZ_ENV) $(FUZZ_BIN)/$$target -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_WORK)/$$target- $(FUZZ_WORK)/$$target Fuzz/Corpus/$$target > $(FUZZ_WORK)/$$target.log 2>&1; \
		status=$$?; grep -E "INITED|DONE|stat::(number_of_executed_units|average_exec_per_sec|peak_rss)" $(FUZZ_WORK)/$$target.log; \
		[ $$status -eq 0 ] || { tail -60 $(FUZZ_WORK)/$$target.log; echo "==> $$target crashed: $(FUZZ_WORK)/$$target-crash-*"; exit 1; }; \
	done

## soak: LoopDemo serve (release; HTTPS with metrics, and plain HTTP), pinned to core 0, under a paced, bounded mix of
## traffic from core 1 for SOAK_MINUTES (default 10): keep-alive and Connection: close, streamed uploads, WebSocket
## echo with permessage-deflate, SSE subscribers that come and go, clients that never read or stall, garbage. RSS,
## descriptors and /hello p99 every 10 s into Benchmarks/soak.csv and soak.svg; fails on RSS growth after warm-up
## (> 5 %), descriptors not back to base, or a 5xx not asked for. Not part of `make test`. Installs websockets (pip).
SOAK_MINUTES ?= 10
soak: deps
	$(SWIFT) build -c release --product LoopDemo
	SOAK_MINUTES=$(SOAK_MINUTES) Benchmarks/soak.sh

## bench: the core rows (bench-core), then HTTP, HTTPS, WebSocket, the main-thread and executor figures, the pool,
## UDP, spawn and the C host's start-up
bench: bench-core
	$(MAKE) bench-http
	$(MAKE) bench-https
	$(MAKE) bench-ws
	$(MAKE) bench-main
	$(MAKE) bench-pool
	$(MAKE) bench-udp
	$(MAKE) bench-spawn
	$(MAKE) bench-startup

## bench-core: LoopKit against SwiftNIO, Dispatch and Foundation, same process, runs alternated (10 each
## after a warm-up); medians with min–max, per-run ratios; never overlapping another bench run (flock)
bench-core: deps
	cd Benchmarks && $(SWIFT) build -c release --product LoopKitBenchmarks
	cd Benchmarks && flock /tmp/loopkit-bench.lock $(SWIFT) run -c release LoopKitBenchmarks | tee RESULTS.txt

## bench-callgrind: instructions per operation of the CPU-bound core rows, LoopKit and its peer, counted by
## callgrind (each side run for N and 2N operations; the difference / N): repeatable on a loaded machine
bench-callgrind: deps
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	cd Benchmarks && $(SWIFT) build -c release --product LoopKitBenchmarks
	flock /tmp/loopkit-bench.lock Benchmarks/callgrind.sh | tee Benchmarks/RESULTS-callgrind.txt

## bench-callgrind-http: instructions, allocations and retains per keep-alive GET /hello, LoopDemo serve against
## nginx (one process), each run under callgrind for N and 2N requests from h2load (Benchmarks/server-callgrind.sh)
bench-callgrind-http: deps
	@command -v valgrind >/dev/null 2>&1 && command -v nginx >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind nginx nghttp2-client; }
	$(SWIFT) build -c release --product LoopDemo
	flock /tmp/loopkit-bench.lock Benchmarks/server-callgrind.sh | tee Benchmarks/RESULTS-callgrind-http.txt

## wrk: install wrk (Debian's package) when it is missing
wrk:
	@if ! command -v wrk >/dev/null 2>&1; then \
		echo "==> wrk not found: installing it"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk; \
	fi

## bench-http: LoopKitHTTP vs NIOHTTP1, Hummingbird 2 and nginx under wrk, each server pinned to core 0, wrk to core 1
bench-http: deps wrk
	@command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product NIOHTTPPeer && $(SWIFT) build -c release --product HummingbirdPeer
	flock /tmp/loopkit-bench.lock Benchmarks/http-bench.sh | tee Benchmarks/RESULTS-http.txt

## bench-compression: a 100 KiB JSON file compressed per response (identity, gzip, br, zstd) by LoopDemo serve --root
## against nginx's gzip at the same level (sendfile on); wrk -t1 -c64, server on core 0, wrk on core 1, alternated rounds
bench-compression: deps wrk
	@command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx; }
	$(SWIFT) build -c release --product LoopDemo
	flock /tmp/loopkit-bench.lock Benchmarks/compression-bench.sh | tee Benchmarks/RESULTS-compression.txt

## bench-callgrind-h2: the same count over HTTP/2 (h2c by prior knowledge, one stream in flight per connection), LoopKit
## against nginx (`listen … http2`)
bench-callgrind-h2: deps
	@command -v valgrind >/dev/null 2>&1 && command -v nginx >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind nginx nghttp2-client; }
	$(SWIFT) build -c release --product LoopDemo
	PROTOCOL=h2c SIDES="loopkit nginx" flock /tmp/loopkit-bench.lock Benchmarks/server-callgrind.sh | tee Benchmarks/RESULTS-callgrind-h2.txt

## bench-files: a 1 KiB file (wrk -t1 -c64, keep-alive) and a 100 MiB file over one connection (curl: MB/s, server CPU
## per GiB) served by LoopDemo serve --root against nginx (one process, sendfile on), the 1 KiB file also against
## Hummingbird's FileMiddleware; server on core 0, client on core 1
bench-files: deps wrk
	@command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product HummingbirdPeer
	flock /tmp/loopkit-bench.lock Benchmarks/files-bench.sh | tee Benchmarks/RESULTS-files.txt

## bench-files-callgrind: instructions and allocations per keep-alive file request (1 KiB; 100 KiB JSON as gzip),
## LoopDemo serve --root against nginx, each under callgrind for N and 2N requests from h2load
bench-files-callgrind: deps
	@command -v valgrind >/dev/null 2>&1 && command -v nginx >/dev/null 2>&1 && command -v h2load >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind nginx nghttp2-client; }
	$(SWIFT) build -c release --product LoopDemo
	flock /tmp/loopkit-bench.lock Benchmarks/files-callgrind.sh | tee Benchmarks/RESULTS-callgrind-files.txt

## bench-h2: LoopKitHTTP's HTTP/2 vs swift-nio-http2 (NIOHTTP2Peer), nginx (one worker, `http2`) and h2o (one thread) with
## h2load -c 64 -m 100, h2c then h2 over TLS; then against swift-nio-http2 a 1 GiB upload on one h2c stream (nghttp -d:
## MB/s, RSS growth) and memory per idle h2c connection (10,000); server on core 0, load on core 1, alternated rounds
bench-h2: deps
	@command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx; }
	@command -v h2o >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq h2o; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product NIOHTTP2Peer
	flock /tmp/loopkit-bench.lock Benchmarks/h2-bench.sh | tee Benchmarks/RESULTS-h2.txt

## bench-client: LoopKitHTTPClient (curl's engine and its own) vs AsyncHTTPClient (one event loop each) against LoopDemo serve on core 0, the client
## on core 1, alternated rounds: 64 concurrent keep-alive GET /hello, a 1 GiB download (MB/s, client RSS growth), and
## 100 HTTP/2 streams on one connection beside HTTP/1.1
bench-client: deps
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product ClientBench
	flock /tmp/loopkit-bench.lock Benchmarks/client-bench.sh | tee Benchmarks/RESULTS-client.txt

## bench-client-callgrind: instructions and allocations per keep-alive GET /hello (64 concurrent) and per MiB
## downloaded, in the client process under callgrind, LoopKitHTTPClient on both engines (split: libcurl, libc, Swift runtime,
## its own code) against AsyncHTTPClient (Benchmarks/client-callgrind.sh)
bench-client-callgrind: deps
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product ClientBench
	flock /tmp/loopkit-bench.lock Benchmarks/client-callgrind.sh | tee Benchmarks/RESULTS-callgrind-client.txt

## bench-https: LoopKitHTTP over TLS vs NIOHTTP1 + NIOSSL and nginx (one certificate, ECDSA P-256): keep-alive,
## new connections, idle TLS connection memory, 1 GiB upload; server on core 0, load on core 1
bench-https: deps wrk
	@command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && $(SWIFT) build -c release --product NIOHTTPPeer
	flock /tmp/loopkit-bench.lock Benchmarks/https-bench.sh | tee Benchmarks/RESULTS-https.txt

## bench-ws: live servers: LoopKitHTTP's WebSocket echo vs NIOWebSocket and hummingbird-websocket (64 connections,
## 1 KiB messages; server on core 0, WebSocketLoad on core 1), memory per idle WebSocket, SSE fan-out to 1,000
bench-ws: deps
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && for product in NIOWebSocketPeer HummingbirdWebSocketPeer WebSocketLoad SSEFanout; do \
		$(SWIFT) build -c release --product $$product || exit 1; done
	flock /tmp/loopkit-bench.lock Benchmarks/ws-bench.sh | tee Benchmarks/RESULTS-ws.txt

## bench-main: the runtime programs run on, one process per runtime, alternated: MainActor and main-queue hops with
## the main thread in EventLoop.main.run() vs RunLoop.main.run() and dispatchMain(); Task.sleep(1 ms) lateness on a
## loop vs Swift's default executor; LoopKitExecutors' group vs Swift's and NIO's as the default executor
bench-main: deps
	cd Benchmarks && for product in MainThreadHop TaskSleepLateness GlobalExecutorHops; do \
		$(SWIFT) build -c release --product $$product || exit 1; done
	flock /tmp/loopkit-bench.lock Benchmarks/main-bench.sh | tee Benchmarks/RESULTS-main.txt

## bench-pool: the work pool and files, LoopKit against SwiftNIO in one process, alternated: offload round trip of an
## empty closure (loop -> pool -> loop) vs NIOThreadPool.runIfActive; a 1 GiB file read through the pool vs NIOFileSystem;
## a 1M-item offload burst from loop.process: the loop's busy time per iteration (p50/p99/max) against its 4 ms budget
bench-pool: deps
	cd Benchmarks && $(SWIFT) build -c release --product PoolBench
	flock /tmp/loopkit-bench.lock Benchmarks/pool-bench.sh | tee Benchmarks/RESULTS-pool.txt

## bench-udp: UDP echo of 64-byte datagrams, one loop: LoopDemo udp-echo vs NIO's DatagramBootstrap and libuv (Debian's
## libuv1-dev, installed when missing); server on core 0, UDPLoad on core 1, alternated rounds, median ratios with spread
bench-udp: deps
	@pkg-config --exists libuv || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libuv1-dev; }
	$(SWIFT) build -c release --product LoopDemo
	cd Benchmarks && for product in NIOUDPEchoPeer UVUDPEchoPeer UDPLoad; do \
		$(SWIFT) build -c release --product $$product || exit 1; done
	flock /tmp/loopkit-bench.lock Benchmarks/udp-bench.sh | tee Benchmarks/RESULTS-udp.txt

## bench-spawn: spawn and wait for /bin/true x1,000 on core 0: LoopKit's ChildProcess vs Foundation's Process and libuv's
## uv_spawn (Debian's libuv1-dev, installed when missing); rounds alternated, median ratios with spread
bench-spawn: deps
	@pkg-config --exists libuv || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libuv1-dev; }
	cd Benchmarks && for product in SpawnBench UVSpawnBench; do $(SWIFT) build -c release --product $$product || exit 1; done
	flock /tmp/loopkit-bench.lock Benchmarks/spawn-bench.sh | tee Benchmarks/RESULTS-spawn.txt

## docs: the three DocC catalogues (LoopKit, LoopKitNet, LoopKitHTTP), every symbol link and parameter
## checked (warnings are errors)
DOC_TARGETS := LoopKit LoopKitNet LoopKitHTTP
docs: deps
	@# A build folder of its own: a cached build emits no symbol graph, and this one always has them.
	rm -rf .build/docs && mkdir -p .build/docs .build-docs/symbol-graphs
	$(SWIFT) build --scratch-path .build-docs --target LoopKitHTTP -Xswiftc -emit-symbol-graph \
		-Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/.build-docs/symbol-graphs
	@for target in $(DOC_TARGETS); do \
		rm -rf .build-docs/graphs-$$target && mkdir -p .build-docs/graphs-$$target && \
		cp .build-docs/symbol-graphs/$$target.symbols.json .build-docs/symbol-graphs/$$target@*.symbols.json \
			.build-docs/graphs-$$target/ 2>/dev/null; \
		echo "==> docc $$target"; \
		docc convert Sources/$$target/$$target.docc --additional-symbol-graph-dir .build-docs/graphs-$$target \
			--fallback-display-name $$target --fallback-bundle-identifier org.loopkit.$$target \
			--output-path .build/docs/$$target --warnings-as-errors || exit 1; \
	done
	@echo "==> documentation in .build/docs/{$(shell echo $(DOC_TARGETS) | tr ' ' ',')}"

## lib: libloopkit.so.MAJOR.MINOR.PATCH in .build/libloopkit (stripped; the soname's and the dev symlinks beside it;
## the unstripped link in .build/libloopkit/unstripped), from the release build of LoopKitC, then checked:
## soname, NEEDED (nothing from the toolchain), no rpath, exactly loopkit.h's functions exported, no Foundation
lib: deps
	$(SWIFT) build -c release --product LoopKitC
	@mkdir -p $(LIB_DIR)/unstripped $(LIB_STDCXX_DIR)
	ln -sf $$($(CXX) -print-file-name=libstdc++.a) $(LIB_STDCXX_DIR)/libstdc++.a
	$(SWIFTC) $(LIB_LDFLAGS) -o $(LIB_DIR)/unstripped/$(LIB_FILE) @.build/release/LoopKitC.product/Objects.LinkFileList $(LIB_LIBS)
	strip --strip-unneeded --remove-section=.comment --remove-section=.note -o $(LIB_DIR)/$(LIB_FILE) $(LIB_DIR)/unstripped/$(LIB_FILE)
	ln -sf $(LIB_FILE) $(LIB_DIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(LIB_DIR)/libloopkit.so
	Scripts/libloopkit-check.sh $(LIB_DIR)/$(LIB_FILE) Sources/CLoopKit/include/loopkit.h $(LIB_DIR)/unstripped/$(LIB_FILE)
	@echo "==> $(LIB_DIR)/$(LIB_FILE): $$(stat -c %s $(LIB_DIR)/$(LIB_FILE)) bytes stripped"

## header-check: loopkit.h (through Sources/CLoopKit/header_check.c) compiled as C99, C11 and C++17 with
## -Wall -Wextra -Werror -pedantic, by cc and c++
HEADER_CHECK_FLAGS := -Wall -Wextra -Werror -pedantic -fsyntax-only -ISources/CLoopKit/include Sources/CLoopKit/header_check.c
header-check:
	$(CC) -std=c99 $(HEADER_CHECK_FLAGS)
	$(CC) -std=c11 $(HEADER_CHECK_FLAGS)
	$(CXX) -x c++ -std=c++17 $(HEADER_CHECK_FLAGS)
	@echo "==> loopkit.h: C99, C11 and C++17 without a warning"

## abi-check: loopkit.h's ABI against the checked-in baseline (Sources/CLoopKit/abi/libloopkit.abi) with
## abidiff (abigail-tools, installed when missing): fails on an incompatible change unless LK_VERSION_MAJOR
## moved, and on additions the baseline does not record yet. abi-update: records the current ABI on purpose.
abi-check abi-update:
	@command -v abidw >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq abigail-tools; }
	Scripts/abi-check.sh $(if $(filter abi-update,$@),--update)

## deb: libloopkit$(LK_MAJOR) (the library, its shlibs and symbols) and libloopkit-dev (loopkit.h, loopkit.pc,
## the libloopkit.so symlink) in .build/deb, built with dpkg-deb, then lintian (lintian and dpkg-dev's
## dpkg-shlibdeps installed when missing):
## no error; the warnings that remain are named in the README
deb: lib
	@command -v lintian >/dev/null 2>&1 && command -v dpkg-shlibdeps >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq lintian dpkg-dev; }
	Scripts/make-deb.sh $(LIB_DIR)/$(LIB_FILE) $(DEB_DIR)

## install: loopkit.h, libloopkit.so.MAJOR.MINOR.PATCH (its soname and dev symlinks) and loopkit.pc under
## PREFIX (default /usr/local; ldconfig when run as root without DESTDIR)
install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 Sources/CLoopKit/include/loopkit.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LIB_DIR)/$(LIB_FILE) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIB_FILE) $(DESTDIR)$(PREFIX)/lib/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(PREFIX)/lib/libloopkit.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$${prefix}/lib|' -e 's|@VERSION@|$(LK_VERSION)|' \
		Sources/CLoopKit/loopkit.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/loopkit.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ]; then ldconfig; fi
	@echo "==> installed: cc host.c \$$(pkg-config --cflags --libs loopkit)  (PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig if PREFIX is not on it)"

## install-dynamic: libLoopKitC.so (the Swift runtime not inside: for a host that also loads Swift code) with
## loopkit-dynamic.pc under PREFIX; it finds the toolchain's runtime through its RUNPATH
install-dynamic: deps
	$(SWIFT) build -c $(INSTALL_CONFIG) --product LoopKitC
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 Sources/CLoopKit/include/loopkit.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 .build/$(INSTALL_CONFIG)/libLoopKitC.so $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$${prefix}/lib|' -e 's|@VERSION@|$(LK_VERSION)|' \
		-e 's|^Name: loopkit|Name: loopkit-dynamic|' -e 's|^Libs: .*|Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lLoopKitC|' \
		Sources/CLoopKit/loopkit.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/loopkit-dynamic.pc

## install-check: the proof that a C host can ship libloopkit. The two .debs installed into a scratch root
## (.build/install-check/root); Examples/c-host, Examples/c-echo, the C ABI test and a C++17 host
## (Tests/CLoopKitTests/cxx_host_test.cpp: its libstdc++ beside the library's) built through pkg-config
## alone (its sysroot the scratch root); each run with the Swift toolchain's folder hidden by a mount
## namespace (skipped, said so, where namespaces are refused), under valgrind (no definite leak; the test's
## 1,000 cycles) and the test under LeakSanitizer; then make install DESTDIR=… and c-host through its .pc
INSTALL_ROOT  := $(CURDIR)/.build/install-check/root
INSTALL_LIBDIR := $(INSTALL_ROOT)/usr/lib/$(DEB_MULTIARCH)
INSTALL_PKG   := PKG_CONFIG_SYSROOT_DIR=$(INSTALL_ROOT) PKG_CONFIG_PATH=$(INSTALL_LIBDIR)/pkgconfig
INSTALL_RUN   := LD_LIBRARY_PATH=$(INSTALL_LIBDIR) Scripts/without-toolchain.sh $(SWIFT_TOOLCHAIN)
install-check: deb
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	rm -rf .build/install-check && mkdir -p $(INSTALL_ROOT) $(dir $(C_TEST_LIB))
	for deb in $(DEB_DIR)/*.deb; do dpkg-deb -x $$deb $(INSTALL_ROOT) || exit 1; done
	$(MAKE) -C Examples/c-host clean
	$(MAKE) -C Examples/c-echo clean
	$(INSTALL_PKG) $(MAKE) -C Examples/c-host PKG=1 host
	$(INSTALL_PKG) $(MAKE) -C Examples/c-echo PKG=1 echo
	readelf -d Examples/c-host/host | grep -E 'NEEDED|RPATH|RUNPATH'
	$(INSTALL_PKG) $(CC) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -DLK_TEST_PRIVATE_DISPATCH -o $(C_TEST_LIB) \
		Tests/CLoopKitTests/c_api_test.c $$($(INSTALL_PKG) pkg-config --cflags --libs loopkit) $$(pkg-config --libs libevent) -lpthread
	$(INSTALL_PKG) $(CC) -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -DLK_TEST_PRIVATE_DISPATCH -fsanitize=leak -g -o $(C_TEST_LIB)-lsan \
		Tests/CLoopKitTests/c_api_test.c $$($(INSTALL_PKG) pkg-config --cflags --libs loopkit) $$(pkg-config --libs libevent) -lpthread
	$(INSTALL_PKG) $(CXX) -std=c++17 -Wall -Wextra -Werror -pedantic -o $(C_TEST_LIB)-cxx Tests/CLoopKitTests/cxx_host_test.cpp \
		$$($(INSTALL_PKG) pkg-config --cflags --libs loopkit) -pthread
	$(INSTALL_RUN) sh -c 'ldd Examples/c-host/host && Examples/c-host/host && Examples/c-echo/echo && ./$(C_TEST_LIB) && \
		./$(C_TEST_LIB)-cxx && $(VALGRIND) ./$(C_TEST_LIB)-cxx > /dev/null && \
		$(VALGRIND) Examples/c-host/host > /dev/null && $(VALGRIND) Examples/c-echo/echo > /dev/null && \
		$(VALGRIND) ./$(C_TEST_LIB) --cycles 1000 && ./$(C_TEST_LIB)-lsan > /dev/null && ./$(C_TEST_LIB)-lsan --cycles 200'
	rm -rf .build/install-check/prefix
	$(MAKE) install DESTDIR=$(CURDIR)/.build/install-check/prefix PREFIX=/usr/local
	$(MAKE) -C Examples/c-host clean
	PKG_CONFIG_SYSROOT_DIR=$(CURDIR)/.build/install-check/prefix PKG_CONFIG_PATH=$(CURDIR)/.build/install-check/prefix/usr/local/lib/pkgconfig \
		$(MAKE) -C Examples/c-host PKG=1 host
	LD_LIBRARY_PATH=$(CURDIR)/.build/install-check/prefix/usr/local/lib Scripts/without-toolchain.sh $(SWIFT_TOOLCHAIN) Examples/c-host/host > /dev/null
	$(MAKE) -C Examples/c-host clean
	$(MAKE) -C Examples/c-echo clean
	@echo "==> install check: the packages' library runs both C examples and the C ABI test without the toolchain, no leak"

## bench-startup: a C host's whole process (create a loop, one iteration, destroy it) under hyperfine (installed
## when missing): libloopkit against libLoopKitC.so (release) and a libuv 1.44 host (uv_loop_init,
## uv_run(UV_RUN_NOWAIT), uv_loop_close; libuv1-dev installed when missing) and an empty main that loads OpenSSL
## (what libloopkit pays for TLS until it leaves); instructions per process (callgrind); sizes and NEEDED of the libraries
bench-startup: lib
	@command -v hyperfine >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq hyperfine; }
	@pkg-config --exists libuv || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libuv1-dev; }
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	flock /tmp/loopkit-bench.lock Benchmarks/startup/startup-bench.sh $(LIB_DIR) .build/release | tee Benchmarks/RESULTS-startup.txt

clean:
	rm -rf .build .build-tsan .build-docs Benchmarks/.build Fuzz/.build Examples/release-client/.build
	$(MAKE) -C Examples/c-host clean
	$(MAKE) -C Examples/c-echo clean
