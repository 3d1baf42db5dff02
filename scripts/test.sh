#!/usr/bin/env bash
# The README's test command after the install: lint, the docs site, then the whole suite on both stores at once —
# SQLite in the foreground and PostgreSQL (a throwaway cluster from scripts/postgres.sh, selected by
# RADAR_TEST_DB_URL) in the background, its log printed when it ends. Exit status: non-zero if either
# pass fails. Extra arguments go to both pytest runs (e.g. scripts/test.sh -k kill).
# RADAR_TEST_STORES=sqlite (or postgresql) runs only one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
STORES=${RADAR_TEST_STORES:-sqlite,postgresql}
# The suite starts radar in subprocesses hundreds of times: with bytecode caching off (some CI images set
# PYTHONDONTWRITEBYTECODE) each start would compile the package again
unset PYTHONDONTWRITEBYTECODE

"$PY" -m ruff check src tests bench
# The documentation site (docs/, mkdocs.yml) builds with no warning: broken links and anchors fail here.
# The `docs` extra installs MkDocs; the built-in theme needs nothing from the network.
if ! "$PY" -c "import mkdocs" 2>/dev/null; then
  echo "mkdocs is missing: install the docs extra (.venv/bin/pip install -e '.[dev,postgres,docs]')" >&2
  exit 1
fi
docs_out=$(mktemp -d /tmp/radar-docs.XXXXXX)
"$PY" -m mkdocs build --strict --quiet --site-dir "$docs_out" || { rm -rf "$docs_out"; exit 1; }
rm -rf "$docs_out"
echo "docs: mkdocs build --strict passed"
# Both passes need these; install them once, before two processes race for apt's and npm's locks.
scripts/install_browser.sh >/dev/null
scripts/graphql_schema.sh >/dev/null

# The SQLite pass spreads its modules over two processes (pytest-xdist: `--dist loadfile` keeps a module, and
# the store its module fixtures build, in one process; the session's full store is built once and copied;
# `--no-loadscope-reorder` keeps the order tests/conftest.py gives: the longest modules first).
# The PostgreSQL pass runs beside it in one process. RADAR_TEST_WORKERS=0 runs the SQLite pass in one process.
workers=${RADAR_TEST_WORKERS:-2}
xdist=()
if [ "$workers" != 0 ]; then xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder); fi

work=$(mktemp -d /tmp/radar-test.XXXXXX)
chmod 755 "$work"  # the cluster belongs to the postgres user when run as root
pg_pid=""
# --- real-model pass, part 1 of 2: build llama-server and fetch the 0.5B weights in the background
# (niced, cached in ~/.cache/infra-radar: ~7 min cold, nothing warm) while the other passes run. Runs when no
# pytest arguments are given, or with RADAR_REAL_MODEL=1; RADAR_REAL_MODEL=0 skips it (and says so).
real=${RADAR_REAL_MODEL:-$([ $# = 0 ] && echo 1 || echo 0)}
real_pid="" real_started=""
if [ "$real" = 1 ]; then
  # what it will build and fetch, and the disk it takes in its cache, is said now; the rest goes to the log
  RADAR_MODEL_SIZE=0.5b scripts/model_server.sh plan
  echo "Real-model pass: preparing the server in the background (log printed if it fails;" \
       "RADAR_REAL_MODEL=0 skips this pass)"
  RADAR_MODEL_SIZE=0.5b PYTHON="$PY" scripts/model_server.sh prepare >"$work/model.log" 2>&1 &
  real_pid=$!
fi
cleanup() {
  [ -n "$real_pid" ] && kill "$real_pid" 2>/dev/null || true
  [ -n "$real_started" ] && RADAR_MODEL_SIZE=0.5b scripts/model_server.sh stop 2>/dev/null || true
  [ -n "$pg_pid" ] && kill "$pg_pid" 2>/dev/null || true
  [ -d "$work/pg" ] && scripts/postgres.sh stop "$work/pg"
  rm -rf "$work"
}
trap cleanup EXIT

if [[ $STORES == *postgresql* ]]; then
  url=$(RADAR_PG_DIR="$work/pg" scripts/postgres.sh)
  echo "PostgreSQL pass: $url (log printed at the end)"
  RADAR_TEST_DB_URL=$url "$PY" -m pytest -p no:cacheprovider --basetemp="$work/pytest-pg" "$@" \
    >"$work/pg.log" 2>&1 &
  pg_pid=$!
fi

status=0
if [[ $STORES == *sqlite* ]]; then
  echo "SQLite pass:"
  env -u RADAR_TEST_DB_URL "$PY" -m pytest "${xdist[@]}" "$@" || status=$?
fi

# --- real-model pass, part 2 of 2: start the server (unless one runs already) and send a few prompts,
# while the PostgreSQL pass (the longer one) finishes beside it
if [ "$real" = 1 ]; then
  echo "Real-model pass (scripts/model_server.sh, Qwen2.5-Coder 0.5B):"
  real_status=0
  wait "$real_pid" || real_status=$?
  real_pid=""
  grep '^model_server:' "$work/model.log" || true  # what the preparation did, and the cache it holds
  if [ "$real_status" = 0 ]; then
    RADAR_MODEL_SIZE=0.5b scripts/model_server.sh status >/dev/null 2>&1 || real_started=1
    # one thread: llama.cpp's threads wait for each other at every step, and on a busy machine (the other
    # pass, a CI neighbour) a descheduled second thread stalls the first for minutes (seen: a 416-token
    # prompt unfinished after 5 min with a CPU hog beside it; one thread answers it in seconds)
    exports=$(RADAR_MODEL_SIZE=0.5b RADAR_MODEL_THREADS=${RADAR_MODEL_THREADS:-1} PYTHON="$PY" \
      scripts/model_server.sh start 2>>"$work/model.log") || real_status=$?
  fi
  if [ "$real_status" = 0 ]; then
    eval "$exports"
    RADAR_TEST_LLM_URL=$RADAR_LLM_BASE_URL RADAR_TEST_LLM_MODEL=$RADAR_LLM_MODEL \
      env -u RADAR_TEST_DB_URL -u RADAR_LLM_BASE_URL -u RADAR_LLM_MODEL -u RADAR_LLM_CONCURRENCY -u RADAR_LLM_TIMEOUT \
      "$PY" -m pytest -p no:cacheprovider -q -rs -s tests/test_llm_real.py || real_status=$?
  else
    echo "real-model pass: the server could not be built or started (exit $real_status):"
    tail -20 "$work/model.log"
  fi
  [ "$real_status" = 0 ] || status=$real_status
else
  echo "Real-model pass: skipped (RADAR_REAL_MODEL=0, or pytest arguments given; RADAR_REAL_MODEL=1 runs it)"
fi
if [ -n "$pg_pid" ]; then
  pg_status=0
  wait "$pg_pid" || pg_status=$?
  pg_pid=""
  echo "PostgreSQL pass (exit $pg_status):"
  cat "$work/pg.log"
  [ "$pg_status" = 0 ] || status=$pg_status
fi

exit "$status"
