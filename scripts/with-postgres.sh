#!/usr/bin/env bash
# Runs a command with a private PostgreSQL cluster for the tests, then stops and removes the cluster.
#   scripts/with-postgres.sh COMMAND [ARGS...]
# The cluster: Debian's postgresql (scripts/install-deps.sh test installs it), initdb'd in a
# temporary folder as an unprivileged user (initdb refuses root: as root it runs as `nobody`),
# listening on 127.0.0.1 on a free port, SCRAM password authentication, fsync on (durability is what
# is tested). The command sees:
#   BROWSERD_TEST_DATABASE_URL   postgres://browserd:PASSWORD@127.0.0.1:PORT/postgres?sslmode=disable
#   BROWSERD_TEST_PG_CTL         a script that runs pg_ctl on the cluster (e.g. `$BROWSERD_TEST_PG_CTL restart`)
# With BROWSERD_TEST_DATABASE_URL already set, the command runs against that server instead.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
if [ -n "${BROWSERD_TEST_DATABASE_URL:-}" ]; then exec "$@"; fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: no PostgreSQL server found under /usr/lib/postgresql (scripts/install-deps.sh test installs it)" >&2
  exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/browserd-pg.XXXXXX")
chmod 755 "$dir"
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$dir"
  as=(runuser -u nobody --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$password" > "$dir/pwfile"
[ ${#as[@]} -eq 0 ] || chown nobody "$dir/pwfile"

pg_ctl=("${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on -c max_connections=300 -c shared_buffers=64MB")
stop() {
  "${pg_ctl[@]}" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

if ! "${as[@]}" "$bindir/initdb" -D "$dir/data" -U browserd --pwfile="$dir/pwfile" --auth=scram-sha-256 -E UTF8 \
    --no-instructions > "$dir/initdb.log" 2>&1; then
  echo "with-postgres: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1
fi
rm -f "$dir/pwfile"
if ! "${pg_ctl[@]}" start > /dev/null 2>&1; then
  echo "with-postgres: the server did not start:" >&2; cat "$dir/server.log" >&2; exit 1
fi
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
# pg_ctl on this cluster, for tests that stop and start the server.
{ printf '#!/usr/bin/env bash\nexec'; printf ' %q' "${pg_ctl[@]}"; printf ' "$@"\n'; } > "$dir/pg_ctl.sh"
chmod 755 "$dir/pg_ctl.sh"

export BROWSERD_TEST_DATABASE_URL="postgres://browserd:$password@127.0.0.1:$port/postgres?sslmode=disable"
export BROWSERD_TEST_PG_CTL="$dir/pg_ctl.sh"
status=0
"$@" || status=$?
exit "$status"
