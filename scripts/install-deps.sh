#!/usr/bin/env bash
# Installs, with apt and only when missing, the system packages one of browserd's commands needs:
#   scripts/install-deps.sh          build and run: libmicrohttpd, libsqlite3 and liblz4 (-dev) with pkg-config
#   scripts/install-deps.sh test     the above, plus curl, Debian's python3 with venv (for .venv),
#                                    chromium with chromium-driver (the browser tests drive it headless),
#                                    postgresql (the tests run a private cluster: scripts/with-postgres.sh)
#                                    and tmux (browserd-tabs is tested in a pseudo-terminal)
#   scripts/install-deps.sh bench    the above, plus wrk, nginx-light, procps, gcc (slow-disk shim) and postgresql
# Nothing here installs Python packages: `make test` keeps those in ./.venv (scripts/venv.sh).
# Uses sudo when not root. Works on Debian 12 and Ubuntu 24.04.
set -euo pipefail
mode=${1:-run}
packages=(libmicrohttpd-dev libsqlite3-dev liblz4-dev pkg-config)
case "$mode" in
  run) ;;
  test) packages+=(curl python3 python3-venv chromium chromium-driver postgresql tmux) ;;
  bench) packages+=(curl python3 python3-venv wrk nginx-light procps gcc libc6-dev postgresql) ;;
  *) echo "usage: $0 [run|test|bench]" >&2; exit 2 ;;
esac

if ! command -v swift >/dev/null 2>&1; then
  echo "swift is not on PATH: install a Swift 6 toolchain first (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "missing packages (${missing[*]}) and no sudo: install them as root" >&2; exit 1; }
  sudo="sudo"
fi
# The tests start their own PostgreSQL cluster: Debian's package must not make and start a system one.
if printf '%s\n' "${missing[@]}" | grep -qx postgresql && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  $sudo mkdir -p /etc/postgresql-common
  echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
echo "installing with apt: ${missing[*]}"
# The package lists, unless fetched in the last half hour (make test installs the build's packages, then
# the tests', and fetches them once).
stamp=/var/lib/apt/lists/.browserd-updated
if [ -z "$(find "$stamp" -mmin -30 2>/dev/null)" ]; then
  $sudo apt-get update -qq
  $sudo touch "$stamp"
fi
# dpkg without an fsync per file (as Debian's own image builds install): a crash mid-install is re-run.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
# Debian starts nginx as a service on install; the benchmark runs its own instance.
if printf '%s\n' "${missing[@]}" | grep -qx nginx-light; then $sudo service nginx stop >/dev/null 2>&1 || true; fi
