#!/usr/bin/env bash
# bench/run.sh - inferd's benchmark suite (`make bench` runs it after `make all`).
#
# Measures, on 127.0.0.1 with the server pinned to one core and the load
# generator to another, the server's CPU time per request, throughput and
# latency of inferd (HTTP/1.1 binary and JSON, gRPC unary and streaming, the
# dynamic batcher) next to baselines taken in the same run: nginx returning a
# fixed body (driven by wrk and by inferd-perf --raw-get) and h2load sending
# a prepared gRPC ModelInfer to inferd; then the resident memory of 10,000
# idle keep-alive connections. See bench/README.md for what each figure means.
#
# Environment:
#   BENCH_SECONDS=N   measurement window per scenario (default 10)
#   BENCH_WARMUP=N    warm-up before each window (default 2)
#   BENCH_QUICK=1     ~1 minute: 1 s windows, shorter idle hold
#   BENCH_IDLE=N      idle keep-alive connections (default 10000)
#   BENCH_SEQ_IDLE=N  idle sequences (default 10000)
#   BENCH_ONLY=LIST   only these sections, comma-separated: core (identity over
#                     every protocol, h2load, wrk, profiles), batched, idle,
#                     nginx, seq (issue 9: the sequence batcher), ensemble and
#                     reload (issue 10: a 2-step ensemble, and latency while
#                     another model reloads), decoupled (issue 11: a decoupled
#                     model's 100 responses per request against unary identity
#                     requests), conns and slowloris (issue 12: idle gRPC
#                     connections, health latency with ~19,000 open, a
#                     slowloris crowd), shm (issue 13: a 16 MiB tensor in
#                     and out with system shared memory against HTTP binary
#                     and gRPC, and a memcpy-bound limit), capi (issue 14:
#                     identity in-process with --service-kind=triton_c_api
#                     against the same request over HTTP/1.1 binary), python
#                     (issue 15: a Python add_sub model against the identity C
#                     backend, server CPU including the stub processes), cache
#                     (issue 16: a response-cache hit against the identity
#                     model's execution, HTTP binary at 1 and 16), trace
#                     (issue 16: identity with tracing off, configured at
#                     level OFF, and TIMESTAMPS at rate 1000), onnx
#                     (issue 26: the digits ONNX model against identity and
#                     against the same model in a C loop on ONNX Runtime,
#                     bench/ort_floor.c; memory against ORT's own), digits
#                     (issue 27: the digits ensemble's latency at concurrency 1
#                     against the client calling its two models itself), pytorch
#                     (issue 27: the digits TorchScript model against identity and
#                     against the same module in a C++ loop on libtorch,
#                     bench/torch_floor.cc), uds (issue 29: identity at
#                     concurrency 1 over Unix domain sockets against loopback
#                     TCP, HTTP binary and gRPC; UDS_ROUNDS=N rounds, default
#                     2), big (issue 31: 1 MiB and 16 MiB identity
#                     over HTTP binary and gRPC at 8 connections against
#                     three memcpy's of the tensor, RSS over 10,000
#                     requests), ab (issue 30: this build against a baseline build,
#                     BENCH_BASE=DIR, AB_ROUNDS=N; see the section); default
#                     all but ab
#   BENCH_CONNS=N     conns: idle HTTP connections (default NOFILE - 1000, at
#                     most 19000); BENCH_CONNS_GRPC=N idle gRPC ones (1000)
#   BENCH_SLOW_N=N, BENCH_SLOW_INTERVAL=S  slowloris: connections (5000) and
#                     seconds between two header bytes of one (3)
#   BENCH_RELOAD_PAUSE_MS=N  reload section: the paced loop's pause after each
#                     unload (default 100; the other loop runs back to back)
#   BENCH_PROFILE=0|1|auto  perf-record inferd where it misses a target (default auto)
#   BENCH_OUT=DIR     results folder (default bench/results/<timestamp>)
#   SERVER_CORE / LOAD_CORE  cores to pin to (default 0 / 1)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
PY=/usr/bin/python3
SERVER_CORE=${SERVER_CORE:-0}
LOAD_CORE=${LOAD_CORE:-1}
MODELS=$HERE/models

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  WINDOW=${BENCH_SECONDS:-1}
  WARM=${BENCH_WARMUP:-1}
  IDLE_HOLD=4
  MARGIN=1
  PROFILE=${BENCH_PROFILE:-0}
else
  WINDOW=${BENCH_SECONDS:-10}
  WARM=${BENCH_WARMUP:-2}
  IDLE_HOLD=8
  MARGIN=2
fi
IDLE_N=${BENCH_IDLE:-10000}
SEQ_IDLE_N=${BENCH_SEQ_IDLE:-10000}
ONLY=${BENCH_ONLY:-}
# section NAME: true when BENCH_ONLY is unset or lists NAME.
# The ab section runs only when named (it needs BENCH_BASE).
section() {
  if [ -z "$ONLY" ]; then [ "$1" != ab ]; else [[ ",$ONLY," == *",$1,"* ]]; fi
}
PROFILE=${PROFILE:-${BENCH_PROFILE:-auto}}
CONCS=(1 16 256)
# The load tools run for RUN_S seconds: the warm-up, the window and a margin,
# so that the window lies inside their steady state.
RUN_S=$((WARM + WINDOW + MARGIN))
TAIL_MAX=$((WINDOW + 15))

source "$HERE/lib/common.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- prerequisites -------------------------------------------------------------
bash third_party/install-deps.sh bench/debian-packages.txt
for f in "$BUILD/inferd" "$BUILD/test/backends/batchcost/libtriton_batchcost.so"; do
  [ -e "$f" ] || make -s -j"$(nproc)" all
done
PERF=$BUILD/inferd-perf
[ -x "$PERF" ] || make -s -j"$(nproc)" all
[ -x "$PERF" ] || die "$PERF is missing (bench/perf/ builds it with make all)"
[ "$(nproc --all)" -ge 2 ] || log "warning: $(nproc) core(s); server and load share a core"

# Many descriptors: 10,000 idle connections on each side, plus some.
ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)

NPROC=$(nproc)
# This shell and its helpers (curl, sleep, the snapshots) stay off the server core.
taskset -cp "$LOAD_CORE" $$ >/dev/null

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RES=${BENCH_OUT:-$HERE/results/$STAMP}
RAW=$RES/raw
mkdir -p "$RAW"
log "results in $RES (window ${WINDOW}s, warm-up ${WARM}s, nofile $NOFILE)"

# The batched model needs the batchcost test backend beside its config.
cp "$BUILD/test/backends/batchcost/libtriton_batchcost.so" "$MODELS/batched/"

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "nproc: $NPROC"
  echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
  echo "kernel: $(uname -sr)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "inferd: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"
  echo "nginx: $(nginx -v 2>&1 | sed 's/.*: //')"
  echo "wrk: $(wrk -v 2>&1 | head -1 | awk '{ print $2 }')"
  echo "h2load: $(h2load --version 2>&1 | head -1 | awk '{ print $NF }')"
  echo "window_s: $WINDOW"
  echo "warmup_s: $WARM"
  echo "server_core: $SERVER_CORE"
  echo "load_core: $LOAD_CORE"
  echo "nofile: $NOFILE"
  echo "command: ${BENCH_COMMAND:-make bench}"
} >"$RES/machine.txt"

# ---- the gRPC body for h2load --------------------------------------------------
if section core; then
  PB=$RES/pb
  mkdir -p "$PB"
  protoc -I. --python_out="$PB" proto/grpc_service.proto proto/model_config.proto
  "$PY" "$HERE/lib/grpc_body.py" "$PB" "$RES/grpc_body.bin" identity_fp32 1 >&2
fi

# ---- inferd: identity over every protocol, and its gRPC baseline ---------------
start_inferd inferd
ID=identity_fp32
INFERD_URL_HTTP=127.0.0.1:$HTTP_PORT
INFERD_URL_GRPC=127.0.0.1:$GRPC_PORT

# perf_analyzer-style run of one concurrency for about RUN_S seconds.
perf_args() { # PROTO CONC
  local proto=$1 c=$2
  local common=(--concurrency-range "$c:$c:1" --warmup $((WARM * 500))
    --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99
    --json-summary "$RAW/__SC__/summary.json")
  case $proto in
    http-binary) echo "-m $ID -x 1 -b 1 -u $INFERD_URL_HTTP -i http --http-format binary --shape INPUT0:16" ;;
    http-json) echo "-m $ID -x 1 -b 1 -u $INFERD_URL_HTTP -i http --http-format json --shape INPUT0:16" ;;
    grpc) echo "-m $ID -x 1 -b 1 -u $INFERD_URL_GRPC -i grpc --shape INPUT0:16" ;;
    grpc-stream) echo "-m $ID -x 1 -b 1 -u $INFERD_URL_GRPC -i grpc --streaming --shape INPUT0:16" ;;
  esac
  printf ' %s' "${common[@]}"
}

run_perf() { # SCENARIO KIND PIDS... -- inferd-perf args (with __SC__ for the scenario)
  local sc=$1
  shift
  local args=()
  local a
  for a in "$@"; do args+=("${a//__SC__/$sc}"); done
  mkdir -p "$RAW/$sc"
  measure "$sc" "${args[@]}"
}

if section core; then
  for proto in http-binary http-json grpc grpc-stream; do
    for c in "${CONCS[@]}"; do
      # shellcheck disable=SC2046
      run_perf "inferd_${proto}_c$c" "inferd:$ID" "$INFERD_PID" -- "$PERF" $(perf_args "$proto" "$c")
    done
  done

  for c in "${CONCS[@]}" 64; do
    measure "h2load_grpc_c$c" "inferd:$ID" "$INFERD_PID" -- \
      h2load -c "$c" -m 1 -t 1 -D "$RUN_S" \
      -H 'content-type: application/grpc' -H 'te: trailers' \
      -d "$RES/grpc_body.bin" "http://$INFERD_URL_GRPC/inference.GRPCInferenceService/ModelInfer"
  done

  # Server CPU per request at 64 connections with the baseline tools (issue 8):
  # wrk posting the same JSON inference (h2load -c64 above is the gRPC one).
  measure "wrk_http-json_c64" "inferd:$ID" "$INFERD_PID" -- \
    wrk -t1 -c64 -d"${RUN_S}s" --latency -s "$HERE/lib/post_json.lua" \
    "http://$INFERD_URL_HTTP/v2/models/$ID/infer"
fi

# ---- inferd: the dynamic batcher ---------------------------------------------------
if section batched; then
  run_perf "inferd_batched_c64" "inferd:batched" "$INFERD_PID" -- "$PERF" \
    -m batched -x 1 -b 1 -u "$INFERD_URL_HTTP" -i http --shape INPUT0:2 \
    --concurrency-range 64:64:1 --warmup $((WARM * 500)) \
    --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
    --json-summary "$RAW/__SC__/summary.json"
fi

# ---- inferd: the sequence batcher (issue 9) ------------------------------------------
# Server CPU per request of seq_identity (identity behind the sequence batcher:
# direct, 1 instance, 4 batch slots, START and READY controls) with 64 live
# sequences (inferd-perf gives each of its 64 concurrent requests a sequence
# of 20 +/- 20% requests), against the stateless identity_fp32 at the same
# concurrency, same protocol (HTTP binary tensors), same server.
# With 4 slots, 60 of the 64 sequences wait in the backlog: 4 requests are in
# flight. The same pair at concurrency 4 (every sequence in a slot) compares
# the two at equal requests in flight.
if section seq; then
  for m in identity_fp32:inferd_identity_c64:64 seq_identity:inferd_seq_c64:64 \
    identity_fp32:inferd_identity_c4:4 seq_identity:inferd_seq_c4:4; do
    model=${m%%:*} rest=${m#*:}
    sc=${rest%%:*} conc=${rest#*:}
    run_perf "$sc" "inferd:$model" "$INFERD_PID" -- "$PERF" \
      -m "$model" -x 1 -b 1 -u "$INFERD_URL_HTTP" -i http --shape INPUT0:16 \
      --concurrency-range "$conc:$conc:1" --sequence-length 20 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
  done
fi

# ---- profile where a target is missed ------------------------------------------------
profile_scenario() { # NAME PERF-ARGS...
  local name=$1
  shift
  local dir=$RES/profile/$name
  mkdir -p "$dir"
  log "profiling $name (perf record, cpu-clock, dwarf call graphs)"
  taskset -c "$LOAD_CORE" "$PERF" "$@" >"$dir/tool.out" 2>"$dir/tool.err" &
  local tool=$!
  BENCH_PIDS+=("$tool")
  sleep "$WARM"
  taskset -c "$LOAD_CORE" perf record -e cpu-clock -F 1999 --call-graph dwarf,8192 \
    -o "$dir/perf.data" -p "$INFERD_PID" -- sleep "$(((WINDOW < 5) ? WINDOW : 5))" \
    >"$dir/record.log" 2>&1 || log "perf record failed (see $dir/record.log)"
  wait "$tool" 2>/dev/null || true
  if [ -s "$dir/perf.data" ]; then
    perf report -i "$dir/perf.data" --stdio --no-children --sort symbol \
      -g none --percent-limit 0.5 >"$dir/flat.txt" 2>/dev/null || true
    perf report -i "$dir/perf.data" --stdio --no-children --sort dso \
      -g none >"$dir/dso.txt" 2>/dev/null || true
    perf report -i "$dir/perf.data" --stdio --children --sort symbol \
      -g none --percent-limit 3 >"$dir/children.txt" 2>/dev/null || true
    rm -f "$dir/perf.data.old"
  fi
}

"$PY" "$HERE/lib/report.py" "$RES" --partial >"$RES/partial.txt" 2>&1 || true
want_profile() { # SCENARIO TARGET_US
  [ "$PROFILE" = 1 ] && return 0
  [ "$PROFILE" = auto ] || return 1
  "$PY" "$HERE/lib/report.py" "$RES" --over "$1" "$2"
}
if ! section core; then
  :
elif command -v perf >/dev/null && perf record -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then
  if want_profile inferd_http-json_c16 12; then
    # shellcheck disable=SC2046
    profile_scenario http-json_c16 $(perf_args http-json 16 | sed "s#$RAW/__SC__/summary.json#$RES/profile/http-json_c16/summary.json#")
  fi
  if want_profile inferd_grpc_c16 16; then
    # shellcheck disable=SC2046
    profile_scenario grpc_c16 $(perf_args grpc 16 | sed "s#$RAW/__SC__/summary.json#$RES/profile/grpc_c16/summary.json#")
  fi
else
  log "perf record does not work here; no profile"
fi

# ---- inferd: idle keep-alive connections (a fresh server) -------------------------
stop_pid "$INFERD_PID"
idle_test() { # NAME PORT PID (the process whose memory we read)
  local name=$1 port=$2 pid=$3
  local dir=$RAW/idle_$name
  mkdir -p "$dir"
  local fd0 rss0 anon0 fd1 rss1 anon1 peak=0 i n
  fd0=$(nfds "$pid")
  rss0=$(vm_kib "$pid" VmRSS)
  anon0=$(vm_kib "$pid" RssAnon)
  local cmd=("$PERF" -u "127.0.0.1:$port" -i http --idle-connections "$IDLE_N" --idle-seconds "$IDLE_HOLD")
  printf '%q ' taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/cmd"
  log "idle_$name: ${cmd[*]}"
  taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/tool.out" 2>"$dir/tool.err" &
  local tool=$!
  BENCH_PIDS+=("$tool")
  # Wait until the server holds them all (or stops gaining), then settle.
  local last=-1 still=0
  for ((i = 0; i < IDLE_HOLD * 10; i++)); do
    sleep 0.1
    n=$(($(nfds "$pid") - fd0))
    ((n > peak)) && peak=$n
    if ((n >= IDLE_N)); then break; fi
    if ((n == last)); then still=$((still + 1)); else still=0; fi
    ((still >= 10 && n > 0)) && break
    last=$n
  done
  sleep 1
  fd1=$(nfds "$pid")
  rss1=$(vm_kib "$pid" VmRSS)
  anon1=$(vm_kib "$pid" RssAnon)
  {
    echo "target $IDLE_N"
    echo "fds_before $fd0"
    echo "fds_with $fd1"
    echo "vmrss_before_kib $rss0"
    echo "vmrss_with_kib $rss1"
    echo "rssanon_before_kib $anon0"
    echo "rssanon_with_kib $anon1"
    echo "nofile $NOFILE"
  } >"$dir/idle.txt"
  local rc=0
  wait "$tool" 2>/dev/null || rc=$?
  echo "$rc" >"$dir/tool.rc"
}
if section idle; then
  start_inferd inferd_idle
  # Warm the fresh server's request path once so that lazy one-time allocations
  # are not counted as per-connection memory.
  for ((i = 0; i < 20; i++)); do
    curl -fsS -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/v2/models/$ID/infer" \
      -d '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}'
  done
  idle_test inferd "$HTTP_PORT" "$INFERD_PID"
  stop_pid "$INFERD_PID"
fi

# ---- inferd: idle sequences (issue 9, a fresh server) ---------------------------------
# The server's CPU and its threads' voluntary context switches (each is a
# thread going back to sleep, i.e. one wake-up) over an idle window, first with
# no sequence, then with SEQ_IDLE_N sequences of seq_idle STARTed and left idle
# (inferd-perf --idle-sequences: one START request each; seq_idle holds up to
# 10,000 per instance and expires them after 10 minutes). The idle-timer cost
# is the difference.
if section seq; then
  start_inferd inferd_seqidle
  dir=$RAW/idle_seq
  mkdir -p "$dir"
  SEQ_WIN=$((WINDOW < 10 ? 10 : WINDOW))
  sleep 1
  snapshot "$dir/base_a.snap" "$dir/base_a" none "$INFERD_PID"
  sleep "$SEQ_WIN"
  snapshot "$dir/base_b.snap" "$dir/base_b" none "$INFERD_PID"
  cmd=("$PERF" -m seq_idle -x 1 -u "127.0.0.1:$HTTP_PORT" -i http --shape INPUT0:16
    --idle-sequences "$SEQ_IDLE_N" --idle-seconds $((SEQ_WIN + 4)))
  printf '%q ' taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/cmd"
  log "idle_seq: ${cmd[*]}"
  taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/tool.out" 2>"$dir/tool.err" &
  tool=$!
  BENCH_PIDS+=("$tool")
  for ((i = 0; i < 1200; i++)); do
    grep -q "started" "$dir/tool.out" 2>/dev/null && break
    kill -0 "$tool" 2>/dev/null || break
    sleep 0.1
  done
  if grep -q "started" "$dir/tool.out" 2>/dev/null; then
    sleep 1
    curl -fsS --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null |
      grep '^inferd_sequence_' >"$dir/gauges.txt" || true
    snapshot "$dir/live_a.snap" "$dir/live_a" none "$INFERD_PID"
    sleep "$SEQ_WIN"
    snapshot "$dir/live_b.snap" "$dir/live_b" none "$INFERD_PID"
  else
    log "idle_seq: the sequences did not start (see $dir/tool.err)"
  fi
  rc=0
  wait "$tool" 2>/dev/null || rc=$?
  echo "$rc" >"$dir/tool.rc"
  echo "$SEQ_IDLE_N" >"$dir/target"
  stop_pid "$INFERD_PID"
fi

# ---- nginx baseline ------------------------------------------------------------------
if section nginx; then
  start_nginx
  for c in "${CONCS[@]}" 64; do
    measure "nginx_wrk_c$c" nginx "$NGINX_PID" "$NGINX_WORKER" -- \
      wrk -t1 -c"$c" -d"${RUN_S}s" --latency "http://127.0.0.1:$NGINX_PORT/"
  done
  for c in "${CONCS[@]}"; do
    run_perf "nginx_raw-get_c$c" nginx "$NGINX_PID" "$NGINX_WORKER" -- "$PERF" \
      -u "127.0.0.1:$NGINX_PORT" -i http --raw-get / --concurrency-range "$c:$c:1" \
      --warmup $((WARM * 500)) --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) \
      --percentile 99 --json-summary "$RAW/__SC__/summary.json"
  done
  idle_test nginx "$NGINX_PORT" "$NGINX_WORKER"
  stop_pid "$NGINX_PID"
fi

# ---- issue 10: the registry's benchmark repository ---------------------------------------
# bench/models_registry: identity_fp32 (as in bench/models), ensemble_identity2
# (two identity_fp32 steps) and reload_b (the batchcost test backend from the
# model folder, two instances, never sent a request).
REG_MODELS=$HERE/models_registry
if section ensemble || section reload; then
  cp "$BUILD/test/backends/batchcost/libtriton_batchcost.so" "$REG_MODELS/reload_b/"
fi

# Server CPU per request of the 2-step identity ensemble against one identity
# request, same server, client, protocol and concurrency (16: the server core
# saturates). The server counts the ensemble's requests in its own statistics.
if section ensemble; then
  INFERD_REPO=$REG_MODELS start_inferd inferd_ensemble
  for m in identity_fp32:ens_identity ensemble_identity2:ens_ensemble2; do
    model=${m%%:*} tag=${m#*:}
    run_perf "${tag}_http-binary_c16" "inferd:$model" "$INFERD_PID" -- "$PERF" \
      -m "$model" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --shape INPUT0:16 --concurrency-range 16:16:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
    run_perf "${tag}_grpc_c16" "inferd:$model" "$INFERD_PID" -- "$PERF" \
      -m "$model" -x 1 -b 1 -u "127.0.0.1:$GRPC_PORT" -i grpc \
      --shape INPUT0:16 --concurrency-range 16:16:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
  done
  stop_pid "$INFERD_PID"
fi

# p99 latency of model A (identity_fp32, HTTP binary, concurrency 16) with
# nothing else happening, then while model B (reload_b) is loaded and unloaded
# in a loop over HTTP by bench/lib/reload_loop.py (on the load core); one
# server in explicit mode that starts with A only. Two rounds: a loop back to
# back (B's loads then take a large share of the one server core, which A's
# requests must share), and a loop pausing BENCH_RELOAD_PAUSE_MS (default
# 100) after each unload, each after its own window without reloads.
if section reload; then
  INFERD_REPO=$REG_MODELS start_inferd inferd_reload \
    --model-control-mode=explicit --load-model=identity_fp32
  reload_a() { # SCENARIO
    run_perf "$1" "inferd:identity_fp32" "$INFERD_PID" -- "$PERF" \
      -m identity_fp32 -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --shape INPUT0:16 --concurrency-range 16:16:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
  }
  for round in loop:0 paced:"${BENCH_RELOAD_PAUSE_MS:-100}"; do
    name=${round%%:*} pause=${round#*:}
    reload_a "reload_${name}-base_c16"
    dir=$RAW/reload_${name}_c16
    mkdir -p "$dir"
    taskset -c "$LOAD_CORE" "$PY" "$HERE/lib/reload_loop.py" "127.0.0.1:$HTTP_PORT" reload_b \
      "$dir/reload.json" $((RUN_S + TAIL_MAX + 10)) "$pause" >"$dir/reload.out" 2>&1 &
    loop_pid=$!
    BENCH_PIDS+=("$loop_pid")
    # Start measuring once B's first load has answered.
    for ((i = 0; i < 300; i++)); do
      grep -q "started" "$dir/reload.out" 2>/dev/null && break
      kill -0 "$loop_pid" 2>/dev/null || break
      sleep 0.1
    done
    grep -q "started" "$dir/reload.out" 2>/dev/null || log "reload loop did not start (see $dir/reload.out)"
    reload_a "reload_${name}_c16"
    kill -TERM "$loop_pid" 2>/dev/null || true
    wait "$loop_pid" 2>/dev/null || true
    echo "$pause" >"$dir/pause_ms"
  done
  stop_pid "$INFERD_PID"
fi

# ---- issue 11: a decoupled model ---------------------------------------------------------
# repeat_int32 (test/models/decoupled_repo, the repeat test backend) answering
# each request with 100 responses (IN of 100 zeros, no delay) over gRPC
# ModelStreamInfer, inferd-perf --streaming counting every response up to the
# final flag, against identity_fp32 (as in bench/models) over gRPC unary
# ModelInfer, same server and client: server CPU per response at concurrency
# 16 (the server core saturates) against one identity request's, and the
# latency to the first response at concurrency 1 against an identity
# request's latency. The server counts requests: report.py divides by 100.
DEC_RESPONSES=100
if section decoupled; then
  DEC_MODELS=$RES/models_decoupled
  mkdir -p "$DEC_MODELS"
  cp -r "$MODELS/identity_fp32" "$DEC_MODELS/"
  cp -r "$ROOT/test/models/decoupled_repo/repeat_int32" "$DEC_MODELS/"
  cp "$BUILD/test/backends/repeat/libtriton_repeat.so" "$DEC_MODELS/repeat_int32/"
  echo "$DEC_RESPONSES" >"$RES/decoupled_responses"
  INFERD_REPO=$DEC_MODELS start_inferd inferd_decoupled
  for c in 1 16; do
    run_perf "dec_identity_grpc_c$c" "inferd:identity_fp32" "$INFERD_PID" -- "$PERF" \
      -m identity_fp32 -x 1 -b 1 -u "127.0.0.1:$GRPC_PORT" -i grpc \
      --shape INPUT0:16 --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
    run_perf "dec_repeat${DEC_RESPONSES}_grpc-stream_c$c" "inferd:repeat_int32" "$INFERD_PID" -- \
      "$PERF" -m repeat_int32 -x 1 -b 1 -u "127.0.0.1:$GRPC_PORT" -i grpc --streaming \
      --shape "IN:$DEC_RESPONSES" --shape "DELAY:$DEC_RESPONSES" --input-data zero \
      --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
  done
  stop_pid "$INFERD_PID"
fi

# ---- issue 12: many connections --------------------------------------------------------
# conns (a fresh server): 1,000 idle gRPC connections (lib/connhold.py grpc-idle:
# preface, SETTINGS and one ServerLive call each): VmRSS per connection. Then
# GET /v2/health/ready at concurrency 1 (inferd-perf --raw-get) with no other
# connection, and again while CONNS_N idle HTTP keep-alive connections are open
# (inferd-perf --idle-connections: one GET each; default NOFILE - 1,000, i.e.
# 19,000 under this machine's hard limit of 20,000), all on the one loop: p99
# latency, VmRSS per connection, and the kernel's side (/proc/net/sockstat TCP
# buffer pages and /proc/meminfo Slab, both ends of every loopback connection,
# machine-wide: approximate).
CONNS_N=${BENCH_CONNS:-$((NOFILE - 1000))}
if [ -z "${BENCH_CONNS:-}" ] && ((CONNS_N > 19000)); then CONNS_N=19000; fi
CONNS_GRPC=${BENCH_CONNS_GRPC:-1000}
# hold_until FILE TEXT SECONDS PID: waits until FILE contains TEXT (or PID ends).
hold_until() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
kmem() { # sockstat TCP mem pages, Slab KiB
  echo "tcp_mem_pages $(awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat)"
  echo "slab_kib $(awk '$1 == "Slab:" { print $2 }' /proc/meminfo)"
}
health_p99() { # NAME: GET /v2/health/ready, concurrency 1, one window
  local dir=$RAW/conns
  local cmd=("$PERF" -u "127.0.0.1:$HTTP_PORT" -i http --raw-get /v2/health/ready
    --concurrency-range 1:1:1 --warmup $((WARM * 1000)) --measurement-interval $((WINDOW * 1000))
    --percentile 99 --json-summary "$dir/$1.json")
  printf '%q ' taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/$1.cmd"
  log "conns $1: ${cmd[*]}"
  taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/$1.out" 2>&1 || log "conns $1: inferd-perf failed (see $dir/$1.out)"
}
warm_identity() { # 20 JSON inferences: one-time allocations are not per connection
  local i
  for ((i = 0; i < 20; i++)); do
    curl -fsS -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/v2/models/$ID/infer" \
      -d '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}'
  done
}
if section conns; then
  # gRPC and HTTP each on a fresh server: memory one set freed would be
  # reused by the other and hide its cost.
  start_inferd inferd_conns_grpc
  dir=$RAW/conns
  mkdir -p "$dir"
  warm_identity
  taskset -c "$LOAD_CORE" "$PY" "$HERE/lib/connhold.py" grpc-idle "127.0.0.1:$GRPC_PORT" 20 2 \
    "$dir/grpc_warm.json" >/dev/null 2>&1 || true
  sleep 0.5
  {
    echo "grpc_target $CONNS_GRPC"
    echo "grpc_fds_before $(nfds "$INFERD_PID")"
    echo "grpc_vmrss_before_kib $(vm_kib "$INFERD_PID" VmRSS)"
  } >"$dir/conns.txt"
  taskset -c "$LOAD_CORE" "$PY" "$HERE/lib/connhold.py" grpc-idle "127.0.0.1:$GRPC_PORT" \
    "$CONNS_GRPC" 120 "$dir/grpc_hold.json" >"$dir/grpc_hold.out" 2>&1 &
  hold=$!
  BENCH_PIDS+=("$hold")
  hold_until "$dir/grpc_hold.out" holding 100 "$hold" || log "conns: the gRPC connections were not all held (see $dir/grpc_hold.out)"
  sleep 1
  {
    echo "grpc_fds_with $(nfds "$INFERD_PID")"
    echo "grpc_vmrss_with_kib $(vm_kib "$INFERD_PID" VmRSS)"
  } >>"$dir/conns.txt"
  kill -TERM "$hold" 2>/dev/null || true
  wait "$hold" 2>/dev/null || true
  stop_pid "$INFERD_PID"
  start_inferd inferd_conns
  warm_identity
  health_p99 health_base
  {
    echo "http_target $CONNS_N"
    echo "nofile $NOFILE"
    echo "port_range $(tr -s '\t ' ' ' </proc/sys/net/ipv4/ip_local_port_range)"
    echo "http_fds_before $(nfds "$INFERD_PID")"
    echo "http_vmrss_before_kib $(vm_kib "$INFERD_PID" VmRSS)"
    kmem | sed 's/^/before_/'
  } >>"$dir/conns.txt"
  hold_s=$((WARM + WINDOW + 120))
  cmd=("$PERF" -u "127.0.0.1:$HTTP_PORT" -i http --idle-connections "$CONNS_N" --idle-seconds "$hold_s")
  printf '%q ' taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/http_hold.cmd"
  log "conns: ${cmd[*]}"
  t0=$(date +%s%N)
  taskset -c "$LOAD_CORE" "${cmd[@]}" >"$dir/http_hold.out" 2>&1 &
  hold=$!
  BENCH_PIDS+=("$hold")
  hold_until "$dir/http_hold.out" "idle connections: [0-9]* open" 100 "$hold" ||
    log "conns: inferd-perf did not report its connections open (see $dir/http_hold.out)"
  echo "http_open_ms $((($(date +%s%N) - t0) / 1000000))" >>"$dir/conns.txt"
  sleep 1
  {
    echo "http_fds_with $(nfds "$INFERD_PID")"
    echo "http_vmrss_with_kib $(vm_kib "$INFERD_PID" VmRSS)"
    kmem | sed 's/^/with_/'
  } >>"$dir/conns.txt"
  health_p99 health_held
  echo "http_fds_after_health $(nfds "$INFERD_PID")" >>"$dir/conns.txt"
  stop_pid "$hold"
  wait "$hold" 2>/dev/null || true
  stop_pid "$INFERD_PID"
fi

# slowloris (a fresh server): identity_fp32 over HTTP binary (inferd-perf,
# concurrency 1 and 16) alone, then while lib/connhold.py slowloris holds
# BENCH_SLOW_N (default 5,000) connections that each send one header byte
# every BENCH_SLOW_INTERVAL (default 3) seconds without ever ending the header
# (a connection the server closes is opened again). The slowloris client runs
# on the load core beside inferd-perf (one byte per connection per interval:
# about 1,700 sends/s).
SLOW_N=${BENCH_SLOW_N:-5000}
SLOW_INTERVAL=${BENCH_SLOW_INTERVAL:-3}
if section slowloris; then
  start_inferd inferd_slowloris
  slow_perf() { # SCENARIO CONC
    run_perf "$1" "inferd:$ID" "$INFERD_PID" -- "$PERF" \
      -m "$ID" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --shape INPUT0:16 --concurrency-range "$2:$2:1" --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --json-summary "$RAW/__SC__/summary.json"
  }
  for c in 1 16; do
    slow_perf "slowloris-base_c$c" "$c"
  done
  dir=$RAW/slowloris
  mkdir -p "$dir"
  echo "$SLOW_N $SLOW_INTERVAL" >"$dir/params"
  taskset -c "$LOAD_CORE" "$PY" "$HERE/lib/connhold.py" slowloris "127.0.0.1:$HTTP_PORT" "$SLOW_N" \
    $((2 * (RUN_S + TAIL_MAX) + 120)) "$dir/status.json" "$SLOW_INTERVAL" >"$dir/hold.out" 2>&1 &
  hold=$!
  BENCH_PIDS+=("$hold")
  hold_until "$dir/hold.out" holding 100 "$hold" || log "slowloris: not all connections open (see $dir/hold.out)"
  echo "fds_with $(nfds "$INFERD_PID")" >"$dir/server.txt"
  for c in 1 16; do
    slow_perf "slowloris_c$c" "$c"
  done
  echo "fds_after $(nfds "$INFERD_PID")" >>"$dir/server.txt"
  kill -TERM "$hold" 2>/dev/null || true
  wait "$hold" 2>/dev/null || true
  stop_pid "$INFERD_PID"
fi

# ---- issue 13: shared memory -------------------------------------------------------------
# identity_fp32_16m (bench/models: one 16 MiB FP32 tensor in and out, one CPU
# instance) on a fresh inferd, driven by inferd-perf at concurrency 1 and 2:
# over HTTP with the binary tensor extension and over gRPC with raw contents
# (16 MiB each way through loopback TCP), then with --shared-memory=system
# over HTTP and gRPC (inferd-perf creates and registers one region per input
# and output; only the region names travel). Beside them, the memcpy-bound
# limit: bench/lib/memcpy_limit.py copies 16 MiB back to back on the server
# core while the server is idle, before and after the scenarios; with the
# tensors in shared memory a request's only necessary work is the identity
# backend's one copy, so the limit is that core's copies per second.
# Last, shared memory over HTTP again on a server started with
# --loop-spin-us=0 (reported beside: the default loop spins up to 30 us
# waiting for a result, on the one core the copy needs).
SHM_BYTES=16777216
if section shm; then
  dir=$RAW/shm_memcpy
  mkdir -p "$dir"
  shm_memcpy() { # NAME
    taskset -c "$SERVER_CORE" "$PY" "$HERE/lib/memcpy_limit.py" "$SHM_BYTES" \
      "$((WINDOW < 5 ? WINDOW : 5))" "$dir/$1.json" >"$dir/$1.out" 2>&1 ||
      log "shm: memcpy_limit.py failed (see $dir/$1.out)"
  }
  shm_memcpy before
  start_inferd inferd_shm
  for c in 1 2; do
    for mode in http-binary:http: http-system:http:system grpc:grpc: grpc-system:grpc:system; do
      name=${mode%%:*} rest=${mode#*:}
      proto=${rest%%:*} shm=${rest#*:}
      port=$HTTP_PORT
      [ "$proto" = grpc ] && port=$GRPC_PORT
      extra=()
      [ -n "$shm" ] && extra=(--shared-memory "$shm")
      run_perf "shm_${name}_c$c" "inferd:identity_fp32_16m" "$INFERD_PID" -- "$PERF" \
        -m identity_fp32_16m -x 1 -b 1 -u "127.0.0.1:$port" -i "$proto" "${extra[@]}" \
        --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
        --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
        --json-summary "$RAW/__SC__/summary.json"
    done
  done
  stop_pid "$INFERD_PID"
  # The same shared-memory run on a server whose loop never spins waiting
  # for a result (--loop-spin-us=0): with the server on one core, a spinning
  # loop takes that core from the instance thread that is doing the copy.
  start_inferd inferd_shm_nospin --loop-spin-us=0
  run_perf "shm_http-system-nospin_c2" "inferd:identity_fp32_16m" "$INFERD_PID" -- "$PERF" \
    -m identity_fp32_16m -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --shared-memory system \
    --concurrency-range 2:2:1 --warmup $((WARM * 500)) \
    --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
    --json-summary "$RAW/__SC__/summary.json"
  stop_pid "$INFERD_PID"
  shm_memcpy after
fi

# ---- issue 31: big tensors against the copy floor -------------------------------------
# identity_fp32_1m (one 1 MiB FP32 tensor) and identity_fp32_16m (16 MiB) over
# HTTP/1.1 with the binary tensor extension and gRPC unary (raw contents), 8
# connections, on a fresh inferd; server CPU per request from the tool
# (--cpu-pid over its own window) and from the snapshots. The floor: three
# copies of the tensor (socket in, the backend's copy, socket out), timed by
# bench/lib/memcpy_limit.py on the server core with the server idle, before
# and after the scenarios (best slice of either). RSS flat: the server's VmRSS
# after the four scenarios (every one-time allocation done), then after more
# 1 MiB runs that complete at least BIG_RSS_N (default 10000) more requests.
if section big; then
  dir=$RAW/big_memcpy
  mkdir -p "$dir"
  big_memcpy() { # NAME BYTES
    taskset -c "$SERVER_CORE" "$PY" "$HERE/lib/memcpy_limit.py" "$2" \
      "$((WINDOW < 3 ? WINDOW : 3))" "$dir/$1.json" >"$dir/$1.out" 2>&1 ||
      log "big: memcpy_limit.py failed (see $dir/$1.out)"
  }
  big_memcpy before_1m 1048576
  big_memcpy before_16m 16777216
  start_inferd inferd_big
  big_count() { # the requests both big models completed (their statistics)
    local m n total=0
    for m in identity_fp32_1m identity_fp32_16m; do
      n=$(curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/$m/stats" |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["model_stats"][0]["inference_stats"]["success"]["count"])' 2>/dev/null || echo 0)
      total=$((total + n))
    done
    echo "$total"
  }
  big_rss() { # LABEL: one line of raw/big_rss.txt
    echo "$1 $(big_count) $(vm_kib "$INFERD_PID" VmRSS)" >>"$RAW/big_rss.txt"
  }
  : >"$RAW/big_rss.txt"
  big_rss ready
  big_perf() { # SCENARIO MODEL PROTO
    local port=$HTTP_PORT proto_args=(-i http --http-format binary)
    [ "$3" = grpc ] && port=$GRPC_PORT proto_args=(-i grpc --grpc-connections 8)
    run_perf "$1" "inferd:$2" "$INFERD_PID" -- "$PERF" -m "$2" -x 1 -b 1 \
      -u "127.0.0.1:$port" "${proto_args[@]}" --input-data zero \
      --concurrency-range 8:8:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
    big_rss "$1"
  }
  for size in 1m 16m; do
    for proto in http grpc; do
      big_perf "big_${size}_${proto}_c8" "identity_fp32_$size" "$proto"
    done
  done
  # RSS flat: more 1 MiB requests (HTTP, then gRPC, in turns) until
  # BIG_RSS_N (default 10000) more are done or 6 runs.
  first=$(big_count)
  for ((i = 1; i <= 6; i++)); do
    [ $(($(big_count) - first)) -ge "${BIG_RSS_N:-10000}" ] && break
    proto=http
    [ $((i % 2)) = 0 ] && proto=grpc
    big_perf "big_1m_${proto}-rss${i}_c8" identity_fp32_1m "$proto"
  done
  stop_pid "$INFERD_PID"
  big_memcpy after_1m 1048576
  big_memcpy after_16m 16777216
fi

# ---- issue 14: the in-process C API -------------------------------------------------
# identity_fp32 FP32[1,16], concurrency 1, synchronous (one request in flight,
# the next sent when the last one's response is in): first over HTTP/1.1 with
# the binary tensor extension (server on SERVER_CORE, tool on LOAD_CORE, the
# tool reading the server's CPU time over its own window with --cpu-pid), then
# with the server embedded in inferd-perf (--service-kind=triton_c_api: it
# dlopens $BUILD/lib/libtritonserver.so; explicit model control loads only
# identity_fp32), the one process allowed the same two cores. CPU per
# inference: HTTP counts the server's and the client's, C API the whole
# process's (client thread, server loop, instance thread).
if section capi; then
  start_inferd inferd_capi
  run_perf "capi_http-binary_c1" "inferd:$ID" "$INFERD_PID" -- "$PERF" \
    -m "$ID" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
    --concurrency-range 1:1:1 --warmup $((WARM * 500)) \
    --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
    --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
  stop_pid "$INFERD_PID"
  # Not a measure() scenario (no server pid to snapshot: the server is the tool).
  dir=$RAW/capi/c-api_c1
  mkdir -p "$dir"
  cmd=(taskset -c "$SERVER_CORE,$LOAD_CORE" "$PERF" --service-kind=triton_c_api
    --triton-server-directory="$BUILD" --model-repository="$MODELS"
    -m "$ID" -x 1 -b 1 --concurrency-range 1:1:1 --warmup $((WARM * 1000))
    --measurement-interval $((WINDOW * 1000)) --percentile 99
    --json-summary "$dir/summary.json")
  printf '%q ' "${cmd[@]}" >"$dir/cmd"
  log "capi: ${cmd[*]}"
  "${cmd[@]}" >"$dir/tool.out" 2>"$dir/tool.err" || log "capi: inferd-perf failed (see $dir/tool.err)"
  # The same with the client polling 30 us for its answer before it sleeps
  # (--spin-us): what an application that spins costs and saves.
  dir=$RAW/capi/c-api_c1_spin30
  mkdir -p "$dir"
  cmd=(taskset -c "$SERVER_CORE,$LOAD_CORE" "$PERF" --service-kind=triton_c_api
    --triton-server-directory="$BUILD" --model-repository="$MODELS"
    -m "$ID" -x 1 -b 1 --concurrency-range 1:1:1 --warmup $((WARM * 1000))
    --measurement-interval $((WINDOW * 1000)) --percentile 99 --spin-us 30
    --json-summary "$dir/summary.json")
  printf '%q ' "${cmd[@]}" >"$dir/cmd"
  log "capi: ${cmd[*]}"
  "${cmd[@]}" >"$dir/tool.out" 2>"$dir/tool.err" || log "capi: inferd-perf failed (see $dir/tool.err)"
fi

# ---- issue 29: Unix domain sockets against loopback TCP -------------------------------
# identity_fp32 FP32[1,16] at concurrency 1 (synchronous: one request in flight)
# over HTTP/1.1 binary and gRPC unary, to two fresh inferds running side by side
# on the server core: one on 127.0.0.1 TCP, one with --http-address and
# --grpc-address on unix: sockets (inferd-perf -u unix:PATH). Scenarios run
# interleaved, UDS_ROUNDS rounds (default 2), so drift hits both alike; the
# report takes each one's best round. Server CPU per request from the
# snapshots (the UDS server's statistics read through its socket); latency
# from the tool.
if section uds; then
  UDS_DIR=$(mktemp -d /tmp/inferd-bench-uds.XXXXXX)
  start_inferd inferd_uds_tcp
  UDS_TCP_PID=$INFERD_PID UDS_TCP_HTTP=$HTTP_PORT UDS_TCP_GRPC=$GRPC_PORT
  INFERD_HTTP_UNIX=$UDS_DIR/http.sock
  start_inferd inferd_uds_unix --http-address="unix:$UDS_DIR/http.sock" \
    --grpc-address="unix:$UDS_DIR/grpc.sock"
  UDS_UNIX_PID=$INFERD_PID UDS_UNIX_HTTP_PORT=$HTTP_PORT
  unset INFERD_HTTP_UNIX
  uds_perf() { # SCENARIO PID URL PROTO
    local proto_args=(-i http --http-format binary)
    [ "$4" = grpc ] && proto_args=(-i grpc)
    run_perf "$1" "inferd:$ID" "$2" -- "$PERF" -m "$ID" -x 1 -b 1 -u "$3" "${proto_args[@]}" \
      --shape INPUT0:16 --concurrency-range 1:1:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --cpu-pid "$2" --json-summary "$RAW/__SC__/summary.json"
  }
  for ((round = 1; round <= ${UDS_ROUNDS:-2}; round++)); do
    for proto in http grpc; do
      HTTP_PORT=$UDS_TCP_HTTP
      port=$UDS_TCP_HTTP
      [ "$proto" = grpc ] && port=$UDS_TCP_GRPC
      uds_perf "uds_tcp_${proto}_c1_r$round" "$UDS_TCP_PID" "127.0.0.1:$port" "$proto"
      HTTP_PORT=$UDS_UNIX_HTTP_PORT
      INFERD_HTTP_UNIX=$UDS_DIR/http.sock
      uds_perf "uds_unix_${proto}_c1_r$round" "$UDS_UNIX_PID" "unix:$UDS_DIR/$proto.sock" "$proto"
      unset INFERD_HTTP_UNIX
    done
  done
  stop_pid "$UDS_TCP_PID"
  stop_pid "$UDS_UNIX_PID"
  [ -e "$UDS_DIR/http.sock" ] && log "uds: WARNING: $UDS_DIR/http.sock left behind at exit"
  rmdir "$UDS_DIR" 2>/dev/null || true
fi

# ---- A/B: this build against a baseline build (issue 30, and every change after) --
# BENCH_BASE=DIR names the build folder of the baseline (DIR/inferd and
# DIR/backends: e.g. `git worktree add /tmp/base <commit> && make -C /tmp/base`,
# BENCH_BASE=/tmp/base/build). The two inferds run side by side on the server
# core, idle but for the one being measured; identity_fp32 FP32[1,16] over
# HTTP/1.1 binary and JSON, gRPC unary and streaming, at concurrency 1 and 16,
# each scenario once on the baseline and once on this build (which one first
# alternates by round), AB_ROUNDS rounds (default 2) interleaved, so drift
# hits both alike. Report: this build /
# baseline, best and median of the rounds (bench/lib/report30.py).
if section ab; then
  [ -n "${BENCH_BASE:-}" ] && [ -x "$BENCH_BASE/inferd" ] ||
    die "section ab needs BENCH_BASE=DIR, the baseline's build folder (DIR/inferd)"
  BUILD=$BENCH_BASE start_inferd inferd_ab_base
  AB_BASE_PID=$INFERD_PID AB_BASE_HTTP=$HTTP_PORT AB_BASE_GRPC=$GRPC_PORT
  start_inferd inferd_ab_new
  AB_NEW_PID=$INFERD_PID AB_NEW_HTTP=$HTTP_PORT AB_NEW_GRPC=$GRPC_PORT
  git -C "$BENCH_BASE/.." rev-parse --short HEAD >"$RES/ab_base.txt" 2>/dev/null || true
  AB_SAVE=("$HTTP_PORT" "$INFERD_URL_HTTP" "$INFERD_URL_GRPC")
  for ((round = 1; round <= ${AB_ROUNDS:-2}; round++)); do
    for proto in http-binary http-json grpc grpc-stream; do
      for c in 1 16; do
        # The order alternates by round, so neither side always runs
        # second (on caches the other just warmed, or after its drift).
        sides="base new"
        [ $((round % 2)) = 0 ] && sides="new base"
        for side in $sides; do
          if [ "$side" = base ]; then
            pid=$AB_BASE_PID HTTP_PORT=$AB_BASE_HTTP gport=$AB_BASE_GRPC
          else
            pid=$AB_NEW_PID HTTP_PORT=$AB_NEW_HTTP gport=$AB_NEW_GRPC
          fi
          INFERD_URL_HTTP=127.0.0.1:$HTTP_PORT INFERD_URL_GRPC=127.0.0.1:$gport
          # shellcheck disable=SC2046
          run_perf "ab_${side}_${proto}_c${c}_r$round" "inferd:$ID" "$pid" -- "$PERF" \
            $(perf_args "$proto" "$c") --cpu-pid "$pid"
        done
      done
    done
  done
  HTTP_PORT=${AB_SAVE[0]} INFERD_URL_HTTP=${AB_SAVE[1]} INFERD_URL_GRPC=${AB_SAVE[2]}
  stop_pid "$AB_BASE_PID"
  stop_pid "$AB_NEW_PID"
fi

# ---- issue 15: the Python backend ---------------------------------------------------------
# add_sub_fp32 (bench/models_python: Triton's add_sub example as a user writes
# it, FP32[1,16] in and out, one instance: one stub process) against
# identity_fp32 (the identity C backend, FP32[1,16]), same server, same run,
# over HTTP/1.1 binary at concurrency 1 and 16 (and add_sub with the dynamic
# batcher at 16: add_sub_fp32_batched). Server CPU per request counts
# the server AND its stub processes: the snapshots read /proc/<pid>/stat of
# the server and of every child it has once ready (the stubs), and the tool
# reads the same set over its own window (--cpu-pid PID --cpu-children).
if section python; then
  PY_MODELS=$RES/models_python
  mkdir -p "$PY_MODELS"
  cp -r "$MODELS/$ID" "$HERE/models_python/add_sub_fp32" "$PY_MODELS/"
  # The same model with the dynamic batcher (default settings): several
  # requests per execute, what a user can do about the per-execute cost.
  cp -r "$HERE/models_python/add_sub_fp32" "$PY_MODELS/add_sub_fp32_batched"
  sed -i 's/^name: "add_sub_fp32"$/name: "add_sub_fp32_batched"/' "$PY_MODELS/add_sub_fp32_batched/config.pbtxt"
  echo 'dynamic_batching { }' >>"$PY_MODELS/add_sub_fp32_batched/config.pbtxt"
  INFERD_REPO=$PY_MODELS start_inferd inferd_python
  mapfile -t PY_STUBS < <(child_pids "$INFERD_PID")
  [ "${#PY_STUBS[@]}" -ge 1 ] || die "inferd_python: no stub process (see $RES/inferd_python.log)"
  echo "${PY_STUBS[*]}" >"$RES/python_stub_pids"
  log "python: stub pids ${PY_STUBS[*]}"
  for sc in "$ID:1" add_sub_fp32:1 "$ID:16" add_sub_fp32:16 add_sub_fp32_batched:16; do
    m=${sc%:*}
    c=${sc#*:}
    run_perf "python_${m}_http-binary_c$c" "inferd:$m" "$INFERD_PID" "${PY_STUBS[@]}" -- "$PERF" \
      -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --cpu-pid "$INFERD_PID" --cpu-children --json-summary "$RAW/__SC__/summary.json"
  done
  stop_pid "$INFERD_PID"
fi

# ---- issue 16: tracing ---------------------------------------------------------------------
# identity_fp32 over HTTP/1.1 binary at concurrency 16 on three servers in
# the same run: no trace flags; tracing configured with a file but level
# OFF (the one branch per request); level TIMESTAMPS at rate 1000 (one
# request in 1000 traced, its record written by the writer thread). The
# three run in turn, BENCH_TRACE_ROUNDS times (default 3), so that load from
# outside falls on all of them; the table takes each one's least CPU.
if section trace; then
  TRACE_DIR=$RES/trace
  mkdir -p "$TRACE_DIR"
  for round in $(seq 1 "${BENCH_TRACE_ROUNDS:-3}"); do
  for variant in none off ts1000; do
    case $variant in
      none) flags=() ;;
      off) flags=(--trace-config "triton,file=$TRACE_DIR/off.json" --trace-config level=OFF) ;;
      ts1000) flags=(--trace-config "triton,file=$TRACE_DIR/ts1000.json"
        --trace-config level=TIMESTAMPS --trace-config rate=1000) ;;
    esac
    start_inferd "inferd_trace_${variant}_r$round" "${flags[@]}"
    run_perf "trace_${variant}_r${round}_http-binary_c16" "inferd:$ID" "$INFERD_PID" -- "$PERF" \
      -m "$ID" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --concurrency-range 16:16:1 --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
    stop_pid "$INFERD_PID"
  done
  done
  log "trace: files $(ls "$TRACE_DIR" | tr '\n' ' ')"
fi

# ---- issue 16: the response cache ----------------------------------------------------------
# identity_fp32 (FP32[1,16]) against identity_fp32_cached (the same model with
# response_cache { enable: true }), one server with --cache-config=local,
# size=1048576, same run, over HTTP/1.1 binary at concurrency 1 and 16.
# inferd-perf sends the same input every time: after the first request every
# request to the cached model is a hit (answered from the cache on the loop,
# no instance thread); the plain model runs the identity backend each time.
if section cache; then
  CACHE_MODELS=$RES/models_cache
  mkdir -p "$CACHE_MODELS"
  cp -r "$MODELS/$ID" "$CACHE_MODELS/"
  cp -r "$MODELS/$ID" "$CACHE_MODELS/${ID}_cached"
  sed -i "s/^name: \"$ID\"$/name: \"${ID}_cached\"/" "$CACHE_MODELS/${ID}_cached/config.pbtxt"
  echo 'response_cache { enable: true }' >>"$CACHE_MODELS/${ID}_cached/config.pbtxt"
  INFERD_REPO=$CACHE_MODELS start_inferd inferd_cache --cache-config=local,size=1048576
  for sc in "$ID:1" "${ID}_cached:1" "$ID:16" "${ID}_cached:16"; do
    m=${sc%:*}
    c=${sc#*:}
    run_perf "cache_${m}_http-binary_c$c" "inferd:$m" "$INFERD_PID" -- "$PERF" \
      -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
      --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
      --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
      --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
  done
  curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/${ID}_cached/stats" >"$RES/cache_stats.json" || true
  stop_pid "$INFERD_PID"
fi

# ---- issue 26: the ONNX Runtime backend ----------------------------------------------------
# digits_onnx (examples/model_repository: the digits MLP, FP32[64] -> FP32[10] + INT64[1],
# max_batch_size 16, dynamic_batching, one CPU instance, default ORT options) against
# identity_fp32 (the identity C backend, FP32[16]), one server, same run, HTTP/1.1 binary
# at concurrency 1 and 16: server CPU per request from the snapshots (server process).
# Then, with no server running, the floor: bench/ort_floor.c (built here from
# ort_api.h) runs the same model.onnx straight on ONNX Runtime in a C loop pinned to
# the server core, batch 1 (the floor) and batches 2..16 (what a dynamic batch costs
# ORT), and reports CPU per run. Memory from /proc: VmHWM of a server serving only
# identity_fp32 and of the one serving both (just ready, and after the load), against
# the floor program's VmHWM less its own --bare run's (ORT's footprint for one session).
if section onnx; then
  ONNX_RAW=$RAW/onnx
  mkdir -p "$ONNX_RAW"
  ORT_SO=$BUILD/backends/onnxruntime/libtriton_onnxruntime.so
  ORT_LIB=${ORT_LIB:-}
  if [ -z "$ORT_LIB" ]; then
    for f in "$BUILD/backends/onnxruntime/libonnxruntime.so.1" \
      /opt/inferd/onnxruntime-1.30.0/lib/libonnxruntime.so.1; do
      if [ -e "$f" ]; then ORT_LIB=$f; break; fi
    done
  fi
  if [ ! -e "$ORT_SO" ] || [ -z "$ORT_LIB" ]; then
    echo "backend $ORT_SO or libonnxruntime.so.1 missing (make; third_party/install-onnxruntime.sh)" \
      >"$ONNX_RAW/skipped"
    log "onnx: skipped: $(cat "$ONNX_RAW/skipped")"
  else
    FLOOR=$BUILD/bench/ort_floor
    mkdir -p "$BUILD/bench"
    cc -std=c11 -Wall -Wextra -Werror -O2 -I. -o "$FLOOR" bench/ort_floor.c -ldl ||
      die "onnx: building $FLOOR failed"
    echo "$ORT_LIB" >"$ONNX_RAW/ort_lib"
    DIGITS=digits_onnx
    ONNX_MODELS=$RES/models_onnx
    ONNX_BASE=$RES/models_onnx_base
    mkdir -p "$ONNX_MODELS" "$ONNX_BASE"
    cp -r "$MODELS/$ID" "$ONNX_BASE/"
    cp -r "$MODELS/$ID" "$ROOT/examples/model_repository/$DIGITS" "$ONNX_MODELS/"
    # Memory: a server without the model, then the one with it, each just ready.
    INFERD_REPO=$ONNX_BASE start_inferd inferd_onnx_base
    sleep 1
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$ONNX_RAW/mem_server_identity.txt"
    stop_pid "$INFERD_PID"
    INFERD_REPO=$ONNX_MODELS start_inferd inferd_onnx
    wait_http "http://127.0.0.1:$HTTP_PORT/v2/models/$DIGITS/ready" 30 ||
      die "onnx: $DIGITS not ready (see $RES/inferd_onnx.log)"
    sleep 1
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$ONNX_RAW/mem_server_digits.txt"
    grep '^Threads:' "/proc/$INFERD_PID/status" >"$ONNX_RAW/server_threads.txt" || true
    for sc in "$ID:1:INPUT0:16" "$DIGITS:1:pixels:64" "$ID:16:INPUT0:16" "$DIGITS:16:pixels:64"; do
      IFS=: read -r m c inp dim <<<"$sc"
      run_perf "onnx_${m}_http-binary_c$c" "inferd:$m" "$INFERD_PID" -- "$PERF" \
        -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary --shape "$inp:$dim" \
        --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
        --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
        --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
    done
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$ONNX_RAW/mem_server_digits_after.txt"
    curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/$DIGITS/stats" >"$ONNX_RAW/digits_stats.json" || true
    stop_pid "$INFERD_PID"
    # Outputs written in place against copied once: an ONNX Identity over one
    # 1 MiB FP32 tensor whose output size the config fixes (ONNX Runtime writes
    # into the response's buffer) and the same with a dynamic dim (ONNX Runtime
    # writes into its own buffer, the backend copies it out, as Triton's ORT
    # backend does for every output). HTTP binary, concurrency 1 and 8.
    ONNX_BIG=$RES/models_onnx_big
    mkdir -p "$ONNX_BIG"
    "$PY" "$HERE/lib/make_ort_identity.py" "$ONNX_BIG" 262144 ||
      die "onnx: make_ort_identity.py failed (python3-onnx?)"
    INFERD_REPO=$ONNX_BIG start_inferd inferd_onnx_big
    for m in ort_id_fixed ort_id_dynamic; do
      wait_http "http://127.0.0.1:$HTTP_PORT/v2/models/$m/ready" 30 ||
        die "onnx: $m not ready (see $RES/inferd_onnx_big.log)"
    done
    for sc in ort_id_fixed:1 ort_id_dynamic:1 ort_id_fixed:8 ort_id_dynamic:8; do
      IFS=: read -r m c <<<"$sc"
      run_perf "onnx_${m}_http-binary_c$c" "inferd:$m" "$INFERD_PID" -- "$PERF" \
        -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary \
        --shape INPUT0:262144 --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
        --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
        --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
    done
    stop_pid "$INFERD_PID"
    # The floor, on the server core, with nothing else running there.
    taskset -c "$SERVER_CORE" "$FLOOR" --bare >"$ONNX_RAW/floor_bare.json"
    for b in 1 2 4 8 16; do
      secs=$WINDOW
      [ "$b" = 1 ] || secs=$(((WINDOW + 1) / 2))
      log "onnx: ort_floor batch $b, ${secs}s"
      taskset -c "$SERVER_CORE" "$FLOOR" --lib "$ORT_LIB" --seconds "$secs" --batch "$b" \
        "$ONNX_MODELS/$DIGITS/1/model.onnx" >"$ONNX_RAW/floor_b$b.json" 2>"$ONNX_RAW/floor_b$b.err" ||
        log "onnx: ort_floor batch $b failed (see $ONNX_RAW/floor_b$b.err)"
    done
  fi
fi

# ---- issue 27: the digits ensemble against the client chaining its models ----------------
# examples/model_repository's digits ensemble (digits_preprocess in Python, UINT8 -> FP32 / 16;
# digits_onnx; digits_postprocess, one ONNX node picking the label's probability) against a
# client that calls digits_preprocess, then digits_onnx with its output, and picks the
# probability itself. One server (core 0, the Python stub with it), HTTP/1.1 binary,
# concurrency 1. First inferd-perf (C) on each model alone: the ensemble, and the two models
# the chain calls (their latencies' sum is what a C client chaining them pays at least); then
# bench/lib/digits_chain.py, one Python client (core 1, one keep-alive connection) timing the
# ensemble, the ensemble asked for `label` only (the chain's two steps) and the chain, taking
# turns in 5 rounds over the window.
if section digits; then
  DIG_RAW=$RAW/digits
  mkdir -p "$DIG_RAW"
  if [ ! -e "$BUILD/backends/onnxruntime/libtriton_onnxruntime.so" ] ||
    [ ! -e "$BUILD/backends/python/triton_python_backend_stub" ]; then
    echo "the onnxruntime or python backend is not built (make all)" >"$DIG_RAW/skipped"
    log "digits: skipped: $(cat "$DIG_RAW/skipped")"
  else
    DIG_MODELS=$RES/models_digits
    mkdir -p "$DIG_MODELS"
    for m in digits digits_preprocess digits_onnx digits_postprocess; do
      cp -r "$ROOT/examples/model_repository/$m" "$DIG_MODELS/"
    done
    INFERD_REPO=$DIG_MODELS start_inferd inferd_digits
    wait_http "http://127.0.0.1:$HTTP_PORT/v2/models/digits/ready" 60 ||
      die "digits: the ensemble is not ready (see $RES/inferd_digits.log)"
    for sc in digits:pixels:64 digits_preprocess:pixels:64 digits_onnx:pixels:64; do
      IFS=: read -r m inp dim <<<"$sc"
      run_perf "digits_${m}_http-binary_c1" "inferd:$m" "$INFERD_PID" -- "$PERF" \
        -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary --shape "$inp:$dim" \
        --concurrency-range 1:1:1 --warmup $((WARM * 500)) \
        --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
        --json-summary "$RAW/__SC__/summary.json"
    done
    log "digits: ensemble against the chained calls, one Python client, ${WINDOW}s"
    timeout $((WINDOW * 3 + 60)) taskset -c "$LOAD_CORE" "$PY" "$HERE/lib/digits_chain.py" \
      "127.0.0.1:$HTTP_PORT" "$WINDOW" "$DIG_RAW/chain.json" >"$DIG_RAW/chain.out" 2>&1 ||
      log "digits: digits_chain.py failed (see $DIG_RAW/chain.out)"
    for m in digits digits_preprocess digits_onnx digits_postprocess; do
      curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/$m/stats" >"$DIG_RAW/stats_$m.json" || true
    done
    stop_pid "$INFERD_PID"
  fi
fi

# ---- issue 27: the PyTorch backend against libtorch alone ---------------------------------
# digits_torchscript (examples/model_repository: the digits MLP as TorchScript, INPUT__0 FP32[64]
# -> OUTPUT__0 FP32[10] + OUTPUT__1 INT64[1], max_batch_size 16, dynamic_batching, one CPU
# instance, no parameters: libtorch's defaults) against identity_fp32 (the identity C backend,
# FP32[16]), one server, same run, HTTP/1.1 binary at concurrency 1 and 16: server CPU per request
# from the snapshots (server process). Then, with no server running, the floor:
# bench/torch_floor.cc (built here with g++ against Debian's libtorch, the Makefile's flags for
# the backend) loads the same model.pt with torch::jit::load and runs forward() under
# c10::InferenceMode in a C++ loop pinned to the server core, batch 1 (the floor) and batches
# 2..16 (what a dynamic batch costs libtorch), and reports CPU per run. Memory from /proc:
# VmHWM of a server serving only identity_fp32 and of the one serving both (just ready, and after
# the load), against the floor program's VmHWM less its own --bare run's.
if section pytorch; then
  PT_RAW=$RAW/pytorch
  mkdir -p "$PT_RAW"
  PT_BACKEND=$BUILD/backends/pytorch/libtriton_pytorch.so
  PT_INC=/usr/include/torch/csrc/api/include
  if [ ! -e "$PT_BACKEND" ] || [ ! -d "$PT_INC" ]; then
    echo "backend $PT_BACKEND or libtorch-dev ($PT_INC) missing (make deps; make)" >"$PT_RAW/skipped"
    log "pytorch: skipped: $(cat "$PT_RAW/skipped")"
  else
    TFLOOR=$BUILD/bench/torch_floor
    mkdir -p "$BUILD/bench"
    if [ ! -x "$TFLOOR" ] || [ bench/torch_floor.cc -nt "$TFLOOR" ]; then
      log "pytorch: building $TFLOOR"
      g++ -std=c++17 -Wall -Wextra -Werror -pthread -O2 -g -isystem "$PT_INC" -o "$TFLOOR" \
        bench/torch_floor.cc -ltorch -ltorch_cpu -lc10 || die "pytorch: building $TFLOOR failed"
    fi
    PTM=digits_torchscript
    PT_MODELS=$RES/models_pytorch
    PT_BASE=$RES/models_pytorch_base
    mkdir -p "$PT_MODELS" "$PT_BASE"
    cp -r "$MODELS/$ID" "$PT_BASE/"
    cp -r "$MODELS/$ID" "$ROOT/examples/model_repository/$PTM" "$PT_MODELS/"
    # Memory: a server without the model, then the one with it, each just ready.
    INFERD_REPO=$PT_BASE start_inferd inferd_pytorch_base
    sleep 1
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$PT_RAW/mem_server_identity.txt"
    stop_pid "$INFERD_PID"
    INFERD_REPO=$PT_MODELS start_inferd inferd_pytorch
    wait_http "http://127.0.0.1:$HTTP_PORT/v2/models/$PTM/ready" 60 ||
      die "pytorch: $PTM not ready (see $RES/inferd_pytorch.log)"
    sleep 1
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$PT_RAW/mem_server_digits.txt"
    grep '^Threads:' "/proc/$INFERD_PID/status" >"$PT_RAW/server_threads.txt" || true
    for sc in "$ID:1:INPUT0:16" "$PTM:1:INPUT__0:64" "$ID:16:INPUT0:16" "$PTM:16:INPUT__0:64"; do
      IFS=: read -r m c inp dim <<<"$sc"
      run_perf "pytorch_${m}_http-binary_c$c" "inferd:$m" "$INFERD_PID" -- "$PERF" \
        -m "$m" -x 1 -b 1 -u "127.0.0.1:$HTTP_PORT" -i http --http-format binary --shape "$inp:$dim" \
        --concurrency-range "$c:$c:1" --warmup $((WARM * 500)) \
        --measurement-interval $((RUN_S * 1000 - WARM * 500 - 300)) --percentile 99 \
        --cpu-pid "$INFERD_PID" --json-summary "$RAW/__SC__/summary.json"
    done
    { echo "hwm $(vm_kib "$INFERD_PID" VmHWM)"; echo "rss $(vm_kib "$INFERD_PID" VmRSS)"; } \
      >"$PT_RAW/mem_server_digits_after.txt"
    grep '^Threads:' "/proc/$INFERD_PID/status" >"$PT_RAW/server_threads_after.txt" || true
    curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/$PTM/stats" >"$PT_RAW/digits_stats.json" || true
    stop_pid "$INFERD_PID"
    # The floor, on the server core, with nothing else running there.
    taskset -c "$SERVER_CORE" "$TFLOOR" --bare >"$PT_RAW/floor_bare.json"
    for b in 1 2 4 8 16; do
      secs=$WINDOW
      [ "$b" = 1 ] || secs=$(((WINDOW + 1) / 2))
      log "pytorch: torch_floor batch $b, ${secs}s"
      taskset -c "$SERVER_CORE" "$TFLOOR" --seconds "$secs" --batch "$b" --width 64 \
        "$PT_MODELS/$PTM/1/model.pt" >"$PT_RAW/floor_b$b.json" 2>"$PT_RAW/floor_b$b.err" ||
        log "pytorch: torch_floor batch $b failed (see $PT_RAW/floor_b$b.err)"
    done
  fi
fi

# ---- the tables ------------------------------------------------------------------------
"$PY" "$HERE/lib/report.py" "$RES" | tee "$RES/summary.md"
log "done: $RES/summary.md"
