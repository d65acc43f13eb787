#!/usr/bin/env bash
# Starts or stops a private, throwaway PostgreSQL cluster for the test suite
# (fsync off, loopback only, under /tmp so the postgres user can reach it even
# when the checkout lives in a private home directory), leaving any system
# cluster alone.
#   scripts/test-postgres.sh start   # prints the URL to use as SKIFF_TEST_POSTGRES_URL
#   scripts/test-postgres.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SKIFF_TEST_PG_PORT:-55432}"
ROOT="/tmp/skiff-test-pg-$(printf %s "$PWD" | sha256sum | cut -c1-12)"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[ -n "$BIN" ] || { echo "postgresql is not installed (run make setup)" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

case "${1:-}" in
start)
  if [ ! -f "$ROOT/data/PG_VERSION" ]; then
    rm -rf "$ROOT" && mkdir -p "$ROOT/data" "$ROOT/sock"
    [ "$(id -u)" = 0 ] && chown -R postgres "$ROOT"
    chmod 700 "$ROOT/data"
    as_pg "$BIN/initdb -D '$ROOT/data' -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 >'$ROOT/initdb.log'"
  fi
  if ! as_pg "$BIN/pg_ctl -D '$ROOT/data' status" >/dev/null 2>&1; then
    as_pg "$BIN/pg_ctl -D '$ROOT/data' -l '$ROOT/log' -w -o \"-p $PORT -k $ROOT/sock -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400\" start" >/dev/null
  fi
  psql -q -h 127.0.0.1 -p "$PORT" -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='skiff_test'" | grep -q 1 ||
    psql -q -h 127.0.0.1 -p "$PORT" -U postgres -c "CREATE DATABASE skiff_test" >/dev/null
  echo "postgres://postgres@127.0.0.1:$PORT/skiff_test"
  ;;
stop)
  [ -d "$ROOT/data" ] && as_pg "$BIN/pg_ctl -D '$ROOT/data' -m fast stop" >/dev/null 2>&1 || true
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
