#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on 127.0.0.1 for the test suite and print its URL:
#   export RADAR_TEST_DB_URL=$(scripts/postgres.sh)        # then: python -m pytest -q
#   scripts/postgres.sh stop DIR                            # stop and remove a cluster it started
# RADAR_PG_DIR=DIR puts the cluster in DIR (which must not exist yet) instead of a new /tmp/radar-pg.* folder.
# Installs Debian's postgresql with apt-get when no server binaries are found. initdb refuses to run as
# root, so as root the cluster belongs to the `postgres` user (created by the package).
set -euo pipefail

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && { echo "$d"; return; }; done
  return 1
}

as_owner() {  # run a command as the cluster owner
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; else "$@"; fi
}

if [ "${1:-}" = stop ]; then
  dir=${2:?usage: postgres.sh stop DIR}
  as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi

if ! BIN=$(bindir); then
  echo "installing postgresql (apt-get)..." >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  BIN=$(bindir)
fi

if [ -n "${RADAR_PG_DIR:-}" ]; then dir=$RADAR_PG_DIR; mkdir "$dir"; else dir=$(mktemp -d /tmp/radar-pg.XXXXXX); fi
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner "$BIN/initdb" -D "$dir/data" -U radar --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off" start >/dev/null
as_owner "$BIN/createdb" -h 127.0.0.1 -p "$port" -U radar radar
echo "cluster in $dir (stop: scripts/postgres.sh stop $dir)" >&2
echo "postgresql+psycopg://radar@127.0.0.1:$port/radar"
