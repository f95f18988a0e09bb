#!/usr/bin/env bash
# The runtime programs run on (`make bench-main`): three figures, each LoopKit against its peers from the same
# run, each measurement a process of its own (the main thread, dispatchMain() and Swift's executors belong to a
# whole process), the processes alternated round by round (ROUNDS, default 7; each process warms up first).
#   1. MainThreadHop: `await MainActor.run { }` and `DispatchQueue.main.async` round trips from another thread,
#      the main thread in EventLoop.main.run() (with and without LoopKitExecutors.install() first, which makes the
#      main loop Swift's main executor), RunLoop.main.run() or dispatchMain(); on two cores, then all on core 0
#      (the two threads then take turns on one core).
#   2. TaskSleepLateness: Task.sleep(for: 1 ms) lateness on a LoopKit loop against Swift's default executor, both
#      in one process, alternated block by block; the process on core 0, then on two cores.
#   3. GlobalExecutorHops: actor round trips, task-group fan-out and MainActor.run with
#      LoopKitExecutors.install(defaultExecutor:), Swift's own executor and NIO's group as the global executor;
#      a 1-loop group (NIO: 1 loop) with every process on core 0, then a 2-loop group (NIO: 2 loops) on two cores.
# Ratios are peer / LoopKit per round (above 1: LoopKit faster), summarised as their median (min-max).
#   SECTIONS: which of the three to run ("1 2 3"). MAIN_HOP, SLEEP_LATENESS, EXECUTOR_HOPS: the release binaries. ROUND_TRIPS (20000), SLEEPS (2000),
#   ACTOR_ROUND_TRIPS (100000), FANOUTS (200) of CHILDREN (1000).
set -euo pipefail
ROUNDS=${ROUNDS:-7}
SECTIONS=${SECTIONS:-1 2 3}
ROUND_TRIPS=${ROUND_TRIPS:-20000}
SLEEPS=${SLEEPS:-2000}
ACTOR_ROUND_TRIPS=${ACTOR_ROUND_TRIPS:-100000}
FANOUTS=${FANOUTS:-200}
CHILDREN=${CHILDREN:-1000}
MAIN_HOP=${MAIN_HOP:-Benchmarks/.build/release/MainThreadHop}
SLEEP_LATENESS=${SLEEP_LATENESS:-Benchmarks/.build/release/TaskSleepLateness}
SPIN_US=${SPIN_US:-200}   # the timer spin of the fourth side (EventLoop.timerSpin)
EXECUTOR_HOPS=${EXECUTOR_HOPS:-Benchmarks/.build/release/GlobalExecutorHops}
here=$(dirname "$0")
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"

# field LINE KEY: the value after KEY in a "name key value key value ..." line.
field() { awk -v key="$2" '{ for (i = 2; i < NF; i++) if ($i == key) { print $(i + 1); exit } }' <<< "$1"; }

# run_pinned CORES COMMAND...: runs COMMAND on CORES ("all": unpinned), stops the bench when it fails.
run_pinned() {
    local cores=$1; shift
    local pin=()
    [ "$cores" = all ] || pin=(taskset -c "$cores")
    timeout 600 "${pin[@]}" "$@" || { echo "failed: $*" >&2; exit 1; }
}

# stats DECIMALS ARRAY-NAME: "median [min-max]" of its values (thousands separated).
stats() {
    local decimals=$1
    local -n values=$2
    printf '%s\n' "${values[@]}" | sort -g | awk -v d="$decimals" '
        function f(x,   s, i, n, r) { s = sprintf("%." d "f", x); i = index(s, "."); n = i ? substr(s, 1, i - 1) : s
            r = i ? substr(s, i) : ""; while (length(n) > 3 && n ~ /^[0-9]+$/ || length(n) > 4) {
                r = "," substr(n, length(n) - 2) r; n = substr(n, 1, length(n) - 3) } return n r }
        { v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%s [%s-%s]", f(m), f(v[1]), f(v[NR]) }'
}

# ratios PEER-ARRAY LOOPKIT-ARRAY: the per-round peer/LoopKit ratios, one per line.
ratios() {
    local -n theirs=$1 mine=$2
    for i in "${!mine[@]}"; do awk -v a="${theirs[$i]}" -v b="${mine[$i]}" 'BEGIN { printf "%.4f\n", (b > 0 ? a / b : 0) }'; done
}

# ratio PEER-ARRAY LOOPKIT-ARRAY: "M.MMx (min-max)", the median per-round peer/LoopKit ratio.
ratio() {
    ratios "$1" "$2" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2fx (%.2f-%.2f)", m, v[1], v[NR] }'
}

# ratio_median PEER-ARRAY LOOPKIT-ARRAY: the median per-round ratio alone.
ratio_median() { ratios "$1" "$2" | median; }

# median_of ARRAY-NAME
median_of() { local -n values_=$1; printf '%s\n' "${values_[@]}" | median; }

# push ARRAY-NAME VALUE: appends VALUE to the global array ARRAY-NAME.
push() { local -n array_=$1; array_+=("$2"); }

# runs_of ARRAY-NAME: its values, space-separated.
runs_of() { local -n values_=$1; echo "${values_[*]}"; }

# verdict AWK-CONDITION: "met" or "MISSED".
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo MISSED; fi; }

# --- 1. The main thread -------------------------------------------------------------------------------------
main_rows() {
    local cores=$1 title=$2 runtime hop
    # Arrays named per runtime and hop kind: mh_loopkit_mainactor, … (loopkit-executor: mh_loopkitexecutor_…)
    for runtime in loopkit loopkit-executor runloop dispatchmain; do for hop in mainactor mainqueue; do
        declare -ga "mh_${runtime//-/}_${hop}=()"
    done; done
    for _ in $(seq 1 "$ROUNDS"); do
        for runtime in loopkit loopkit-executor runloop dispatchmain; do
            local out; out=$(run_pinned "$cores" "$MAIN_HOP" --runtime "$runtime" --round-trips "$ROUND_TRIPS")
            if [[ $runtime == loopkit* ]] && ! grep -q "main_queue_on_main_loop 1" <<< "$out"; then
                echo "  warning: the main queue did not run inside EventLoop.main"; fi
            if [ "$runtime" = loopkit-executor ] && ! grep -q "executors_installed 1" <<< "$out"; then
                echo "  warning: LoopKitExecutors was not installed"; fi
            for hop in mainactor mainqueue; do
                push "mh_${runtime//-/}_${hop}" "$(field "$(grep "^mainhop .* hop $hop " <<< "$out")" ns_per_round_trip)"
            done
        done
    done
    echo "  $title"
    for hop in mainactor mainqueue; do
        case $hop in
            mainactor) echo "    await MainActor.run { } from a detached task (Swift's pool), ns per round trip" ;;
            mainqueue) echo "    DispatchQueue.main.async { signal } from a thread waiting on a semaphore, ns per round trip" ;;
        esac
        local lk="mh_loopkit_${hop}" lx="mh_loopkitexecutor_${hop}" rl="mh_runloop_${hop}" dm="mh_dispatchmain_${hop}"
        printf '      %-37s %-24s %-27s runs: %s\n' "LoopKit EventLoop.main.run()" "$(stats 0 "$lk")" "" "$(runs_of "$lk")"
        printf '      %-37s %-24s %-27s runs: %s\n' "Foundation RunLoop.main.run()" "$(stats 0 "$rl")" "$(ratio "$rl" "$lk") LoopKit's" "$(runs_of "$rl")"
        printf '      %-37s %-24s %-27s runs: %s\n' "Dispatch dispatchMain()" "$(stats 0 "$dm")" "$(ratio "$dm" "$lk") LoopKit's" "$(runs_of "$dm")"
        local vr vd; vr=$(ratio_median "$rl" "$lk"); vd=$(ratio_median "$dm" "$lk")
        echo "      goal: >= 2x RunLoop.main: $(verdict "$vr >= 2"); >= dispatchMain: $(verdict "$vd >= 1")"
        printf '      %-37s %-24s %-27s runs: %s\n' "LoopKit, LoopKitExecutors.install()" "$(stats 0 "$lx")" "" "$(runs_of "$lx")"
        printf '      %-37s %-24s %-27s\n' "  RunLoop.main.run() / it" "" "$(ratio "$rl" "$lx")"
        printf '      %-37s %-24s %-27s\n' "  dispatchMain() / it" "" "$(ratio "$dm" "$lx")"
        vr=$(ratio_median "$rl" "$lx"); vd=$(ratio_median "$dm" "$lx")
        echo "      goal with the executor installed: >= 2x RunLoop.main: $(verdict "$vr >= 2"); >= dispatchMain: $(verdict "$vd >= 1")"
    done
}

# --- 2. Task.sleep lateness ---------------------------------------------------------------------------------
sleep_rows() {
    local cores=$1 title=$2
    local lk50=() lk99=() df50=() df99=() tm50=() tm99=() lkmax=() dfmax=() tmmax=() lkit=() tmit=()
    local sp50=() sp99=() spmax=() spcpu=() lkcpu=()
    for _ in $(seq 1 "$ROUNDS"); do
        local out; out=$(run_pinned "$cores" "$SLEEP_LATENESS" --sleeps "$SLEEPS" --spin-us "$SPIN_US")
        grep -q "loop_task_on_loop 1 default_task_off_loops 1" <<< "$out" || echo "  warning: a task slept on the wrong executor"
        local lk df tm
        lk=$(grep "^sleep executor loopkit " <<< "$out"); df=$(grep "^sleep executor default " <<< "$out")
        tm=$(grep "^sleep executor loop-timer " <<< "$out")
        local sp; sp=$(grep "^sleep executor loopkit-spin " <<< "$out")
        sp50+=("$(field "$sp" p50_us)"); sp99+=("$(field "$sp" p99_us)"); spmax+=("$(field "$sp" max_us)")
        spcpu+=("$(field "$sp" loop_cpu_us_per_sleep)"); lkcpu+=("$(field "$lk" loop_cpu_us_per_sleep)")
        lk50+=("$(field "$lk" p50_us)"); lk99+=("$(field "$lk" p99_us)"); lkmax+=("$(field "$lk" max_us)")
        df50+=("$(field "$df" p50_us)"); df99+=("$(field "$df" p99_us)"); dfmax+=("$(field "$df" max_us)")
        tm50+=("$(field "$tm" p50_us)"); tm99+=("$(field "$tm" p99_us)"); tmmax+=("$(field "$tm" max_us)")
        lkit+=("$(field "$lk" loop_iterations_per_sleep)"); tmit+=("$(field "$tm" loop_iterations_per_sleep)")
    done
    echo "  $title"
    printf '    %-46s p50 %-21s p99 %-24s longest %5.0f us   runs (p99): %s\n' "LoopKit: a task on a loop (executorPreference)" \
        "$(stats 1 lk50)" "$(stats 1 lk99)" "$(median_of lkmax)" "${lk99[*]}"
    printf '    %-46s p50 %-21s p99 %-24s longest %5.0f us   runs (p99): %s\n' "Swift's default executor (Task.detached)" \
        "$(stats 1 df50)" "$(stats 1 df99)" "$(median_of dfmax)" "${df99[*]}"
    printf '    %-46s p50 %-21s p99 %-24s\n' "default / LoopKit, per run" "$(ratio df50 lk50)" "$(ratio df99 lk99)"
    printf '    %-46s p50 %-21s p99 %-24s longest %5.0f us   runs (p99): %s\n' "(reference: a chain of 1 ms loop timers)" \
        "$(stats 1 tm50)" "$(stats 1 tm99)" "$(median_of tmmax)" "${tm99[*]}"
    echo "    (loop iterations per sleep, median of the runs: a loop task's Task.sleep $(median_of lkit), a loop timer $(median_of tmit))"
    echo "    goal: LoopKit's p99 <= 0.5x the default's, i.e. default/LoopKit >= 2x: $(verdict "$(ratio_median df99 lk99) >= 2")"
    printf '    %-46s p50 %-21s p99 %-24s longest %5.0f us   runs (p99): %s\n' "LoopKit, loop.timerSpin = ${SPIN_US} us" \
        "$(stats 1 sp50)" "$(stats 1 sp99)" "$(median_of spmax)" "${sp99[*]}"
    printf '    %-46s p50 %-21s p99 %-24s\n' "default / LoopKit with the spin, per run" "$(ratio df50 sp50)" "$(ratio df99 sp99)"
    echo "    (the loop thread's CPU per sleep, median of the runs: $(median_of lkcpu) us without the spin, $(median_of spcpu) us with it)"
    echo "    goal with loop.timerSpin: $(verdict "$(ratio_median df99 sp99) >= 2")"
}

# --- 3. Swift's default executor ----------------------------------------------------------------------------
executor_rows() {
    local cores=$1 loops=$2 title=$3 executor figure
    for executor in loopkit default nio; do for figure in actor fanout mainactor; do
        declare -ga "ex_${executor}_${figure}=()" "excpu_${executor}_${figure}=()" "exit_${executor}_${figure}=()"
    done; done
    for _ in $(seq 1 "$ROUNDS"); do
        for executor in loopkit default nio; do
            local out; out=$(run_pinned "$cores" "$EXECUTOR_HOPS" --executor "$executor" --loops "$loops" \
                --round-trips "$ACTOR_ROUND_TRIPS" --fanouts "$FANOUTS" --children "$CHILDREN" --main-round-trips "$ROUND_TRIPS")
            local expected; case $executor in loopkit) expected=loopkit-group ;; nio) expected=nio-group ;; *) expected=neither ;; esac
            grep -q "tasks_on $expected" <<< "$out" || echo "  warning: $executor: tasks did not run where expected ($expected)"
            for figure in actor fanout mainactor; do
                local line; line=$(grep "^executors .* figure $figure " <<< "$out")
                push "ex_${executor}_${figure}" "$(field "$line" ns)"
                push "excpu_${executor}_${figure}" "$(field "$line" cpu_ns)"
                push "exit_${executor}_${figure}" "$(field "$line" iterations)"
            done
        done
    done
    echo "  $title"
    local -A counts=([actor]="$ACTOR_ROUND_TRIPS" [fanout]=$((FANOUTS * CHILDREN)) [mainactor]="$ROUND_TRIPS")
    local plural; plural=$([ "$loops" = 1 ] || echo s)
    for figure in actor fanout mainactor; do
        case $figure in
            actor) echo "    actor ping-pong: $ACTOR_ROUND_TRIPS awaited calls from one actor to another, ns per round trip" ;;
            fanout) echo "    task-group fan-out: $FANOUTS groups of $CHILDREN children (addTask { i }, results summed), ns per child" ;;
            mainactor) echo "    for information: await MainActor.run { } from a task on that executor, ns per round trip (the main actor"
                       echo "    is LoopKit's main loop where LoopKit is installed, Dispatch's main queue under dispatchMain() elsewhere)" ;;
        esac
        local iterations; iterations=$(median_of "exit_loopkit_${figure}")
        iterations=$(awk -v i="$iterations" -v n="${counts[$figure]}" 'BEGIN { printf "%.2f", i / n }')
        local executor name
        for executor in loopkit default nio; do
            case $executor in
                loopkit) name="LoopKit group ($loops loop$plural)" ;;
                default) name="Swift's default executor" ;;
                nio) name="NIO group ($loops loop$plural) installed" ;;
            esac
            local lead=""; [ "$executor" = loopkit ] || lead="$(ratio "ex_${executor}_${figure}" "ex_loopkit_${figure}") LoopKit's"
            printf '      %-30s %-24s CPU %6.0f ns  %-27s runs: %s\n' "$name" "$(stats 0 "ex_${executor}_${figure}")" \
                "$(median_of "excpu_${executor}_${figure}")" "$lead" "$(runs_of "ex_${executor}_${figure}")"
        done
        echo "      (LoopKit's loops ran $iterations iterations per operation)"
        if [ "$figure" != mainactor ]; then
            local vd vn; vd=$(ratio_median "ex_default_${figure}" "ex_loopkit_${figure}"); vn=$(ratio_median "ex_nio_${figure}" "ex_loopkit_${figure}")
            echo "      goal: >= 1.0x the default executor: $(verdict "$vd >= 1"); >= 1.0x NIO: $(verdict "$vn >= 1")"
        fi
    done
}

started=$(date +%s)
echo "== The runtime programs run on: $ROUNDS alternated rounds, one process per runtime and round, each warmed up first;"
echo "   figures: median [min-max] of the rounds; ratios: peer / LoopKit per round, median (min-max), above 1 = LoopKit faster"
echo "   ($(nproc) cores, load average at the start: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
# section N: whether SECTIONS names it.
section() { [[ " $SECTIONS " == *" $1 "* ]]; }

if section 1; then
echo "1. A hop to the main thread and back ($ROUND_TRIPS round trips per process after 2000 of warm-up; a ping-pong: one answer awaited"
echo "   before the next; each runtime in its own process, from a synchronous main)"
main_rows all "two cores (unpinned)"
main_rows 0 "one core (taskset -c 0: the main thread and the other take turns)"
echo
fi
if section 2; then
echo "2. Task.sleep(for: .milliseconds(1)) lateness: when the task goes on - its deadline, us ($SLEEPS sleeps per side per process,"
echo "   the two sides alternated in blocks of 100 in one process after a warm-up block each; a LoopGroup(threads: 1) loop)"
sleep_rows 0 "one core (taskset -c 0)"
sleep_rows all "two cores (unpinned)"
echo
fi
if section 3; then
echo "3. Swift's default executor: LoopKitExecutors.install(defaultExecutor: LoopGroup) in an async main, against Swift's own"
echo "   (nothing installed) and NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor(),"
echo "   each its own process; measured from Task.detached after a warm-up of a tenth; wall ns per operation, CPU = the"
echo "   process's CPU time (all threads) per operation"
executor_rows 0 1 "one core: a 1-loop group, NIO with 1 loop, every process on core 0 (taskset -c 0)"
executor_rows all 2 "two cores: a 2-loop group, NIO with 2 loops, unpinned"
echo
fi
echo "(load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(( $(date +%s) - started )) s)"
