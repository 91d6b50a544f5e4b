# bench/common.sh: helpers shared by bench/run, bench/callgrind and bench/ws/run (sourced,
# not run).
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

# ---- measuring helpers (bench/ws/run; usable by any script) ---------------------------

# free_port: a random loopback port nobody listens on and not handed out before by this
# shell, below the kernel's ephemeral range so that no client connection can hold it.
declare -gA BENCH_USED_PORT
free_port() {
  local p low
  low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  [ "${low:-0}" -gt 12000 ] || low=61000
  while :; do
    p=$((10000 + RANDOM % (low - 10000)))
    [ -n "${BENCH_USED_PORT[$p]:-}" ] && continue
    port_open "$p" && continue
    BENCH_USED_PORT[$p]=1; echo "$p"; return
  done
}

# proc_ticks PID: utime + stime of PID (all its threads) in clock ticks, "?" if it is gone.
proc_ticks() {
  [ -r "/proc/$1/stat" ] || { echo "?"; return; }
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# cpu_us TICKS COUNT: microseconds of CPU per unit ("?" when unknown or COUNT is 0).
cpu_us() {
  awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (t == "?" || t == "" || n == "?" || n + 0 == 0) print "?"; else printf "%.4f\n", t * 1e6 / hz / n }'
}

# median V...: the median of the numbers given ("?" ignored; "?" if none).
median() {
  printf '%s\n' "$@" | grep -v '^?$' | grep . | sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# sum V...: the sum of the numbers given ("?" ignored).
sum() { printf '%s\n' "$@" | awk '$1 != "?" { s += $1 } END { print s + 0 }'; }

# fmt FORMAT VALUE: printf, but "?" (or nothing) stays "?".
fmt() { if [ "$2" = "?" ] || [ -z "$2" ]; then echo "?"; else LC_ALL=C printf "$1" "$2"; fi; }

# ratio A B: A / B with 2 decimals, or n/a.
ratio() {
  awk -v a="${1:-?}" -v b="${2:-?}" 'BEGIN { if (a == "?" || b == "?" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# verdict RATIO OP LIMIT: met, missed or n/a (OP is "<=", "<" or ">=").
verdict() {
  awk -v r="$1" -v op="$2" -v l="$3" 'BEGIN { if (r == "n/a") { print "n/a"; exit }
    ok = (op == "<=") ? r <= l : (op == "<") ? r < l : r >= l; print ok ? "met" : "missed" }'
}

# ---- wrk --------------------------------------------------------------------------------

# parse_wrk < WRK_OUTPUT (run with --latency): prints rps p50_us p99_us max_us socket_errors non2xx requests
parse_wrk() {
  awk '
    function us(v,   n) {
      n = v + 0
      if (v ~ /us$/) return n
      if (v ~ /ms$/) return n * 1000
      if (v ~ /m$/)  return n * 60e6
      if (v ~ /h$/)  return n * 3600e6
      if (v ~ /s$/)  return n * 1e6
      return n
    }
    $1 == "Latency" && $2 != "Distribution" { max = us($4) }
    $1 == "50%" { p50 = us($2) }
    $1 == "99%" { p99 = us($2) }
    /requests in/ { req = $1 }
    /^Requests\/sec:/ { rps = $2 }
    /^ *Socket errors:/ { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
    /Non-2xx or 3xx responses:/ { non2xx = $NF }
    END { printf "%s %s %s %s %d %d %s\n", rps == "" ? "?" : rps, p50 == "" ? "?" : p50,
          p99 == "" ? "?" : p99, max == "" ? "?" : max, err, non2xx, req == "" ? "?" : req }'
}

# human_us MICROSECONDS: readable ("?" stays "?").
human_us() {
  awk -v v="$1" 'BEGIN { if (v == "?") print "?"; else if (v >= 1e6) printf "%.2fs\n", v / 1e6;
    else if (v >= 1000) printf "%.2fms\n", v / 1000; else printf "%.0fus\n", v }'
}
