# bench/lib/common.sh - helpers sourced by bench/run.sh.
#
# Everything a scenario measures is recorded RAW under $RES/raw/<scenario>/
# (the load tool's output, two snapshots of the server's CPU time, core 0's
# counters and the server's own request counters); bench/lib/report.py turns
# those files into numbers. Bash only starts processes and takes snapshots.

# Pids of every process this suite started; killed at exit (run.sh traps).
BENCH_PIDS=()

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# A TCP port nothing listens on now (the kernel's choice, then released).
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS [SOCKET]: until URL answers 200 (through the Unix
# domain socket SOCKET when given).
wait_http() {
  local url=$1 secs=$2 sock=${3:-} i
  for ((i = 0; i < secs * 20; i++)); do
    if curl -fsS -o /dev/null --max-time 1 ${sock:+--unix-socket "$sock"} "$url" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  return 1
}

# stop_pid PID: SIGTERM, then SIGKILL after 5 s; only pids we started.
stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do stop_pid "$p"; done
  BENCH_PIDS=()
}

# ---- the servers under test -------------------------------------------------

# start_inferd NAME [FLAGS...]: starts inferd pinned to core 0 on fresh ports,
# serving $INFERD_REPO (default $MODELS), with FLAGS added; sets INFERD_PID,
# HTTP_PORT, GRPC_PORT, METRICS_PORT. With INFERD_HTTP_UNIX set (FLAGS then
# put HTTP on that socket), readiness and the snapshots go through it.
start_inferd() {
  local name=$1
  shift
  HTTP_PORT=$(free_port)
  GRPC_PORT=$(free_port)
  METRICS_PORT=$(free_port)
  while [ "$GRPC_PORT" = "$HTTP_PORT" ]; do GRPC_PORT=$(free_port); done
  while [ "$METRICS_PORT" = "$HTTP_PORT" ] || [ "$METRICS_PORT" = "$GRPC_PORT" ]; do
    METRICS_PORT=$(free_port)
  done
  local cmd=(taskset -c "$SERVER_CORE" "$BUILD/inferd" --model-repository="${INFERD_REPO:-$MODELS}"
    --backend-directory="$BUILD/backends"
    --http-port="$HTTP_PORT" --grpc-port="$GRPC_PORT" --metrics-port="$METRICS_PORT"
    --log-info=false "$@")
  echo "${cmd[*]}" >"$RES/$name.cmd"
  "${cmd[@]}" >"$RES/$name.log" 2>&1 &
  INFERD_PID=$!
  BENCH_PIDS+=("$INFERD_PID")
  wait_http "http://127.0.0.1:$HTTP_PORT/v2/health/ready" 30 "${INFERD_HTTP_UNIX:-}" ||
    die "inferd did not become ready (see $RES/$name.log)"
  log "inferd pid $INFERD_PID: http $HTTP_PORT grpc $GRPC_PORT metrics $METRICS_PORT"
}

# start_nginx: the baseline HTTP server, one worker, pinned to core 0; sets
# NGINX_PID (master), NGINX_WORKER, NGINX_PORT.
start_nginx() {
  local dir=$RES/nginx
  mkdir -p "$dir/tmp"
  NGINX_PORT=$(free_port)
  sed -e "s#@DIR@#$dir#g" -e "s#@PORT@#$NGINX_PORT#g" "$HERE/lib/nginx.conf.in" >"$dir/nginx.conf"
  local cmd=(taskset -c "$SERVER_CORE" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx-error.log")
  echo "${cmd[*]}" >"$RES/nginx.cmd"
  "${cmd[@]}" >"$dir/nginx.out" 2>&1 &
  NGINX_PID=$!
  BENCH_PIDS+=("$NGINX_PID")
  wait_http "http://127.0.0.1:$NGINX_PORT/" 30 || die "nginx did not start (see $dir)"
  NGINX_WORKER=$(pgrep -P "$NGINX_PID" | head -1)
  [ -n "$NGINX_WORKER" ] || die "nginx has no worker process"
  log "nginx master $NGINX_PID worker $NGINX_WORKER port $NGINX_PORT"
}

# ---- snapshots ----------------------------------------------------------------

# snapshot FILE PREFIX KIND PIDS...: one consistent-as-possible sample:
# wall clock, /proc/<pid>/stat of each server process (utime+stime cover all
# of its threads), core 0's /proc/stat line, then the server's own request
# counters (inferd: model statistics; nginx: stub_status), saved beside it.
snapshot() {
  local file=$1 prefix=$2 kind=$3
  shift 3
  {
    echo "t_ns $(date +%s%N)"
    local p
    for p in "$@"; do echo "stat $(cat "/proc/$p/stat")"; done
    # Context switches of every thread (the loop/instance hand-offs show here).
    # Threads may end between the glob and the read (instances of a model
    # being unloaded): cat then fails, which must not fail the suite.
    for p in "$@"; do
      { cat /proc/"$p"/task/*/status 2>/dev/null || true; } |
        awk '/^voluntary_ctxt/ { v += $2 } /^nonvoluntary_ctxt/ { n += $2 } END { print "ctxt", v, n }'
    done
    # CPU time of every live thread in ns (schedstat's first field): finer than
    # utime+stime's clock ticks, for the idle windows.
    for p in "$@"; do
      { cat /proc/"$p"/task/*/schedstat 2>/dev/null || true; } | awk '{ t += $1 } END { printf "sched_ns %.0f\n", t }'
    done
    grep "^cpu$SERVER_CORE " /proc/stat | sed 's/^/core /'
    echo "clk_tck $(getconf CLK_TCK)"
  } >"$file"
  case $kind in
    inferd:*)
      curl -fsS --max-time 5 -o "$prefix.json" ${INFERD_HTTP_UNIX:+--unix-socket "$INFERD_HTTP_UNIX"} \
        "http://127.0.0.1:$HTTP_PORT/v2/models/${kind#inferd:}/versions/1/stats" || true
      ;;
    nginx)
      curl -fsS --max-time 5 -o "$prefix.status" "http://127.0.0.1:$NGINX_PORT/nginx_status" || true
      ;;
  esac
}

# measure SCENARIO KIND PIDS -- TOOL ARGS...: runs the load tool (pinned to
# the load core) in the background, lets it warm up for $WARM s, snapshots,
# waits $WINDOW s, snapshots again, then waits for the tool to finish. The
# tool is told to run for longer than WARM+WINDOW (see run.sh), so the window
# lies inside its steady state; numerator (server CPU) and denominator
# (server-counted requests) both cover exactly that window.
measure() {
  local sc=$1 kind=$2
  shift 2
  local pids=()
  while [ "$1" != "--" ]; do
    pids+=("$1")
    shift
  done
  shift
  local dir=$RAW/$sc
  mkdir -p "$dir"
  echo "$kind" >"$dir/kind"
  printf '%q ' taskset -c "$LOAD_CORE" "$@" >"$dir/cmd"
  echo >>"$dir/cmd"
  log "$sc: $*"
  taskset -c "$LOAD_CORE" "$@" >"$dir/tool.out" 2>"$dir/tool.err" &
  local tool=$!
  BENCH_PIDS+=("$tool")
  sleep "$WARM"
  if ! kill -0 "$tool" 2>/dev/null; then
    log "$sc: load tool exited during warm-up (see $dir/tool.err)"
  fi
  snapshot "$dir/a.snap" "$dir/a" "$kind" "${pids[@]}"
  sleep "$WINDOW"
  snapshot "$dir/b.snap" "$dir/b" "$kind" "${pids[@]}"
  if ! kill -0 "$tool" 2>/dev/null; then
    echo "tool finished before the end of the window" >"$dir/warning"
    log "$sc: WARNING: load tool finished before the window ended"
  fi
  # The tool runs at most TAIL_MAX more seconds before it is stopped.
  local i
  for ((i = 0; i < TAIL_MAX * 10; i++)); do
    kill -0 "$tool" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$tool" 2>/dev/null; then
    log "$sc: load tool still running ${TAIL_MAX}s after the window; stopping it"
    echo "tool stopped by the suite ${TAIL_MAX}s after the window" >>"$dir/warning"
    kill -INT "$tool" 2>/dev/null || true
    sleep 1
    stop_pid "$tool"
  fi
  local rc=0
  wait "$tool" 2>/dev/null || rc=$?
  echo "$rc" >"$dir/tool.rc"
}

# child_pids PID: the pids of PID's children, one per line (every thread's
# /proc/PID/task/T/children: the Python backend's stub processes).
child_pids() {
  cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | sed '/^$/d' | sort -un
}

# vm_kib PID FIELD: a field of /proc/<pid>/status in KiB (VmRSS, RssAnon, ...).
vm_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
# nfds PID: open descriptors.
nfds() { ls "/proc/$1/fd" | wc -l; }
