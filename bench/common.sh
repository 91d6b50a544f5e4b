# bench/common.sh: helpers shared by bench/run and bench/callgrind (sourced, not run).
#
# Expects ROOT (the repository) and BENCH (ROOT/bench) to be set.

say() { printf '%s\n' "$*" >&2; }

# bench_build BUILD_DIR JOBS TARGET...
# Configures and builds the given targets in Release. The top-level project adds
# bench/ when VELA_BUILD_BENCH is ON; without a top-level CMakeLists.txt (or if it
# fails to configure) bench/ is built standalone in BUILD_DIR/standalone, which
# gives every target but vela_bench_app. A target that fails to build is reported
# and skipped: the caller finds out with find_bin.
bench_build() {
  local build_dir=$1 jobs=$2 configured="" t
  shift 2
  mkdir -p "$build_dir"
  if [ -f "$ROOT/CMakeLists.txt" ]; then
    say "== configuring $ROOT in $build_dir"
    if cmake -S "$ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DVELA_BUILD_BENCH=ON \
        -DVELA_BUILD_TESTS=OFF -DVELA_BUILD_EXAMPLES=OFF >"$build_dir/bench-configure.log" 2>&1; then
      configured=$build_dir
    else
      tail -n 20 "$build_dir/bench-configure.log" >&2
      say "top-level configure failed; building bench/ standalone (no vela_bench_app)"
    fi
  fi
  if [ -z "$configured" ]; then
    configured=$build_dir/standalone
    if ! cmake -S "$BENCH" -B "$configured" -DCMAKE_BUILD_TYPE=Release \
        >"$build_dir/bench-configure.log" 2>&1; then
      tail -n 20 "$build_dir/bench-configure.log" >&2
      say "cannot configure bench/"
      return 1
    fi
  fi
  for t in "$@"; do
    say "== building $t"
    if ! cmake --build "$configured" --target "$t" --parallel "$jobs" >"$build_dir/bench-build-$t.log" 2>&1; then
      tail -n 15 "$build_dir/bench-build-$t.log" >&2
      say "$t did not build (see $build_dir/bench-build-$t.log)"
    fi
  done
}

# find_bin BUILD_DIR NAME: the newest executable called NAME under BUILD_DIR.
find_bin() {
  find "$1" -type f -name "$2" -perm -u+x -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-
}

# port_open PORT: true if something accepts connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT PID [SECONDS]: wait until PORT accepts connections; false if PID dies first.
wait_port() {
  local i tries=$(( ${3:-10} * 20 ))
  for ((i = 0; i < tries; i++)); do
    port_open "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
