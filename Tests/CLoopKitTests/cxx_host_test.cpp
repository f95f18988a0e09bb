// A C++17 host of libloopkit (make install-check): the library carries its own libstdc++ (linked in,
// symbols hidden) beside the host's libstdc++.so, and the two do not meet: the host's threads, iostreams
// and exceptions work around loopkit.h's calls, and an invoke_wait from a std::thread reaches the loop.
#include <loopkit.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <thread>

static void count(void *ctx) { *static_cast<int *>(ctx) += 1; }

int main() {
    lk_loop *loop = nullptr;
    if (lk_loop_create(&loop) != LK_OK) return 1;
    int ran = 0;
    std::thread worker([&] {
        if (lk_loop_invoke_wait(loop, count, &ran) != LK_OK) std::abort();
        lk_loop_stop(loop);
    });
    if (lk_loop_run(loop) != LK_OK) return 1;
    worker.join();
    bool caught = false;
    try {
        throw std::runtime_error("the host's own exception");
    } catch (const std::exception &error) {
        caught = true;
    }
    if (lk_loop_destroy(loop) != LK_OK || ran != 1 || !caught) {
        std::fprintf(stderr, "cxx_host_test: failed (ran %d, caught %d)\n", ran, caught);
        return 1;
    }
    std::cout << "cxx_host_test: LoopKit " << lk_version() << " in a C++ host: ok" << std::endl;
    return 0;
}
