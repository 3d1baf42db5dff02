#!/usr/bin/env bash
# The README's test command after the install: lint, then the whole suite on both stores at once —
# SQLite in the foreground and PostgreSQL (a throwaway cluster from scripts/postgres.sh, selected by
# RADAR_TEST_DB_URL) in the background, its log printed when it ends. Exit status: non-zero if either
# pass fails. Extra arguments go to both pytest runs (e.g. scripts/test.sh -k kill).
# RADAR_TEST_STORES=sqlite (or postgresql) runs only one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
STORES=${RADAR_TEST_STORES:-sqlite,postgresql}

"$PY" -m ruff check src tests bench
# Both passes need these; install them once, before two processes race for apt's and npm's locks.
scripts/install_browser.sh >/dev/null
scripts/graphql_schema.sh >/dev/null

work=$(mktemp -d /tmp/radar-test.XXXXXX)
chmod 755 "$work"  # the cluster belongs to the postgres user when run as root
pg_pid=""
cleanup() {
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
  env -u RADAR_TEST_DB_URL "$PY" -m pytest "$@" || status=$?
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
