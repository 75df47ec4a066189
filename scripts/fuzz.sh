#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the fuzz targets (clang, libFuzzer, AddressSanitizer + UndefinedBehaviorSanitizer) into
# build-fuzz/ and runs each one from its seed corpus (built-in files and generated seeds, in
# build-fuzz/corpus/<target>/; what a run finds is kept there).  docs/testing.md: what each asserts.
#   scripts/fuzz.sh [--seconds S | --runs N] [--jobs J] [TARGET...]
#     --seconds S   each target for S seconds (default 60)
#     --runs N      each target for N executions instead
#     --jobs J      targets run J at a time (default 1)
#     --smoke       every target for 5 s from a fixed seed, after replaying its whole corpus
#                   (fuzz/regressions/ included): what the test suite runs
# Exit 0 when every target ran its budget without a crash, a leak or a timeout (> 10 s on one
# input); otherwise 1, with libFuzzer's report and the input saved as build-fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
budget=(-max_total_time=60)
jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) budget=(-max_total_time="$2"); shift 2 ;;
    --runs) budget=(-runs="$2"); shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --smoke) budget=(-max_total_time=5 -seed=1); shift ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -g -O1"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DMARIONETTE_FUZZ=ON -DMARIONETTE_BUILD_TESTS=OFF -DMARIONETTE_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
bin=build-fuzz/bin
all=$(ls $bin | sed -n 's/^fuzz_\(.*\)$/\1/p' | grep -v '^write_seeds$')
[ ${#targets[@]} -gt 0 ] || targets=($all)

# The seed corpus: built-in files, then the generated seeds.
corpus=build-fuzz/corpus
mkdir -p $corpus/model_yaml $corpus/scene_yaml $corpus/inputs_csv
cp models/builtin/*.yaml $corpus/model_yaml/
cp environments/scenes/*.yaml $corpus/scene_yaml/
cp examples/*.csv $corpus/inputs_csv/
ASAN_OPTIONS=detect_leaks=0 $bin/fuzz_write_seeds $corpus models/builtin environments/scenes
# What earlier runs found (fuzz/regressions/): seeds of every target, so each run replays them.
for t in $all; do mkdir -p "$corpus/$t" && cp fuzz/regressions/* "$corpus/$t/"; done

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$root/fuzz/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_one() {
  local t=$1 extra=()
  mkdir -p "$corpus/$t"
  # The targets whose subject is bounded work: no single allocation above 256 MB.
  case $t in contact_scene|model_limits) extra=(-malloc_limit_mb=256) ;; esac
  if ! (cd build-fuzz && bin/fuzz_"$t" "${budget[@]}" -timeout=10 -rss_limit_mb=4096 \
        "${extra[@]}" -max_len=4096 -print_final_stats=1 "corpus/$t" > "fuzz-$t.log" 2>&1); then
    echo "fuzz_$t: FAILED (build-fuzz/fuzz-$t.log)"
    tail -40 "build-fuzz/fuzz-$t.log"
    return 1
  fi
  local runs rate rss
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/fuzz-$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "build-fuzz/fuzz-$t.log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "build-fuzz/fuzz-$t.log")
  echo "fuzz_$t: $runs executions ($rate/s, peak RSS $rss MB): no crash, leak or timeout"
}
status=0
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
