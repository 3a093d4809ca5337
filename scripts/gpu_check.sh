#!/usr/bin/env bash
# One call on a GPU machine: build tilus, run the GPU tests, the seed programs (from
# .seed_examples/ when carried), the examples (and Tilus 0.2's, from .tilus02_examples/
# when carried), compute-sanitizer, and the benchmarks.
# Logs go to /tmp/tilus_gpu (or $TILUS_GPU_LOGS), the benchmarks' JSON files to $OUT (or the
# log folder), so that a device call brings back the results; a short table is printed last.
# With $OUT set, the logs are also packed into $OUT/logs.tgz after every step (a device call
# brings back at most 8 files, and what a call cut off by its time limit left there).
#   usage: scripts/gpu_check.sh [full|tests|sanitize|bench|tests,bench]   (env XDIST_WORKERS: test processes, 8;
#          GPU_TESTS: the test files or ids to run instead of all; EXAMPLES=0: no seeds or
#          examples (Tilus 0.2's still run when carried); BENCHES: the benchmark
#          commands to run instead of all, one per line, e.g. "bench_rowwise.py --quick")
#     full (default): everything; tests: build, GPU tests, seeds, examples;
#     sanitize: build, compute-sanitizer memcheck + racecheck; bench: build, benchmarks.
# Each part fits one device call of 10 minutes; full is for machines without that limit.
# GPU_TEST_SHARD=k/n runs the k-th of n slices of the GPU test files (every n-th file of
# the sorted list) and skips the seeds and examples unless k is 1: a cold machine compiles
# every kernel, and the whole suite then takes longer than one call.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
LOGS=${TILUS_GPU_LOGS:-/tmp/tilus_gpu}
RESULTS=${OUT:-$LOGS}
mkdir -p "$LOGS" "$RESULTS"
MODE=${1:-full}
runs() { [ "$MODE" = full ] || [[ ",$MODE," == *",$1,"* ]]; }  # MODE may list parts: tests,bench
first_slice() { [ -z "${GPU_TEST_SHARD:-}" ] || [ "${GPU_TEST_SHARD%/*}" = 1 ]; }  # (or no slicing)
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"

step() {  # step NAME COMMAND...: runs, records status and seconds, keeps the log
  local name=$1; shift
  local start=$(date +%s.%N)
  if timeout "${STEP_TIMEOUT:-900}" "$@" > "$LOGS/$name.log" 2>&1; then local status=ok; else local status=FAIL; fi
  local secs=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
  printf '%-34s %-5s %7ss\n' "$name" "$status" "$secs" | tee -a "$SUMMARY"
  [ -n "${OUT:-}" ] && tar -czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null
  if [ "$status" = FAIL ]; then echo "---- $name (last lines)"; tail -n 25 "$LOGS/$name.log"; fi
}

# Built exactly as README tells users (no compiler override): the module must work with
# whatever the host's default toolchain does with libstdc++ (issue 18).
rm -rf build/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$LOGS/gpu.txt" 2>&1
echo "c++: $(c++ --version 2>/dev/null | head -1) ($(command -v c++))" >> "$LOGS/gpu.txt"
step build python3 -m pip install --no-build-isolation --no-deps -q .
if runs tests; then
  # Test files in parallel processes when pytest-xdist is there (whole files per worker, so
  # a kernel that faults the CUDA context only fails its own file's later tests).
  XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n ${XDIST_WORKERS:-8} --dist loadfile"
  TARGETS=tests
  if [ -n "${GPU_TEST_SHARD:-}" ]; then
    K=${GPU_TEST_SHARD%/*}; N=${GPU_TEST_SHARD#*/}
    TARGETS=$(python3 -m pytest -m gpu -q --collect-only -p no:cacheprovider tests 2>/dev/null \
              | grep '::' | cut -d: -f1 | sort -u | awk -v k="$K" -v n="$N" '(NR - 1) % n == k - 1')
  fi
  if [ -n "${GPU_TESTS:-}" ]; then  # a chosen list of test files or ids
    TARGETS=$GPU_TESTS
    # fewer files than workers: whole files per worker would leave most workers idle while
    # one compiles a long file's kernels (two row-wise files, on 2 of 8 workers, had not finished in 200 s)
    if [ -n "$XDIST" ] && [ "$(echo $TARGETS | wc -w)" -lt "${XDIST_WORKERS:-8}" ]; then
      XDIST="-n ${XDIST_WORKERS:-8} --dist load"
    fi
  fi
  step pytest_gpu python3 -m pytest -m gpu -q --maxfail=25 $XDIST $TARGETS -p no:cacheprovider
  grep -E '^(FAILED|ERROR)|passed|failed' "$LOGS/pytest_gpu.log" | tail -n 40
  if [ "${EXAMPLES:-1}" = 1 ] && first_slice; then
    if [ -d .seed_examples ]; then  # (with the first slice; EXAMPLES=0: none)
      for f in .seed_examples/*.py; do
        step "seed_$(basename "$f" .py)" python3 "$f"
      done
    fi
    for f in examples/*.py; do
      step "example_$(basename "$f" .py)" python3 "$f" --cuda
    done
  fi
  # Tilus 0.2's own examples, when a checkout's examples/ is carried as .tilus02_examples/
  # (git-ignored, like the seeds): unchanged, on CUDA tensors (scripts/tilus02_examples.py).
  if [ -d .tilus02_examples ] && first_slice; then
    step tilus02_examples python3 scripts/tilus02_examples.py --examples .tilus02_examples --device cuda
  fi
  # and its own test files, when a checkout's tests/ is carried as .tilus02_tests/ (scripts/tilus02_tests.py)
  if [ -d .tilus02_tests ] && first_slice; then
    step tilus02_tests python3 scripts/tilus02_tests.py --tests .tilus02_tests --device cuda
  fi
fi
if runs sanitize; then
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 python3 scripts/sanitize_examples.py
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 1 python3 scripts/sanitize_examples.py
fi
if runs bench; then
  if [ -n "${BENCHES:-}" ]; then  # chosen benchmarks: "script.py args" per line
    while IFS= read -r line; do
      [ -z "$line" ] && continue
      set -- $line; f=$1; shift
      step "bench_$(basename "$f" .py)" python3 "benchmarks/$f" "$@" --out "$RESULTS"
    done <<< "$BENCHES"
  else
    for f in benchmarks/bench_*.py; do
      if [ "$f" = benchmarks/bench_tilus02_attention.py ]; then  # needs Tilus 0.2's examples
        [ -d .tilus02_examples ] && step bench_tilus02_attention python3 "$f" --examples .tilus02_examples --out "$RESULTS"
        continue
      fi
      step "bench_$(basename "$f" .py)" python3 "$f" --out "$RESULTS"
    done
    # the read-only bandwidth ceiling that bounds the decode shapes
    step bench_read_ceiling python3 benchmarks/read_ceiling.py --out "$RESULTS"
  fi
fi
echo "==== $(cat "$LOGS/gpu.txt")"
cat "$SUMMARY"
for f in "$LOGS"/bench_*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 30 "$f"; }; done
cp "$SUMMARY" "$RESULTS/summary.txt" 2>/dev/null
grep -q FAIL "$SUMMARY" && exit 1 || exit 0
