#!/usr/bin/env bash
# Installs PostgreSQL with pgvector and pg_cron from Debian's own archive.
#
# The PostgreSQL major is chosen by what apt can give both extensions for,
# not by what happens to be installed: a Debian 13 machine that still
# carries PostgreSQL 15 from Debian 12 has no pg_cron for it.
#   - a major with postgresql-M-pgvector and postgresql-M-cron binaries
#     (Debian 13: 17) is preferred;
#   - otherwise a major with postgresql-M-cron whose pgvector we build from
#     Debian's own pgvector source package (Debian 12: 15, pgvector 0.8.0
#     from the trixie sources).
# Installs nothing when everything is already present. Prints the chosen
# pg_config path on its last line of output (stdout) for the caller.
set -euo pipefail

log() { echo "install-postgres: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs Debian packages), e.g. sudo make setup"
[ -r /etc/os-release ] || die "no /etc/os-release: only Debian 12 (bookworm) and 13 (trixie) are supported"
# shellcheck disable=SC1091
. /etc/os-release
[ "${ID:-}" = debian ] || die "this is ${PRETTY_NAME:-an unknown system}; only Debian 12 (bookworm) and 13 (trixie) are supported"
case "${VERSION_CODENAME:-}" in
  bookworm|trixie) ;;
  *) die "Debian ${VERSION_ID:-?} (${VERSION_CODENAME:-?}) is not supported; use Debian 12 (bookworm) or 13 (trixie), or point PGMEM_DSN at your own server" ;;
esac

ready() {  # major -> 0 when server, pgvector and pg_cron are all installed
  local dir=/usr/lib/postgresql/$1 share=/usr/share/postgresql/$1/extension
  [ -x "$dir/bin/postgres" ] && [ -f "$dir/lib/vector.so" ] && [ -f "$share/vector.control" ] \
    && [ -f "$dir/lib/pg_cron.so" ] && [ -f "$share/pg_cron.control" ]
}

has_candidate() {  # package -> 0 when apt can install it
  local c
  c=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

choose() {  # sets major and build_vector from what apt offers
  major="" build_vector=0
  local m
  for m in 18 17 16 15; do
    if has_candidate "postgresql-$m-cron" && has_candidate "postgresql-$m-pgvector"; then major=$m; return; fi
  done
  for m in 18 17 16 15; do
    if has_candidate "postgresql-$m-cron" && has_candidate "postgresql-server-dev-$m"; then
      major=$m build_vector=1; return
    fi
  done
}

export DEBIAN_FRONTEND=noninteractive
# The package lists on disk usually answer; refresh them only when they don't.
choose
if [ -z "$major" ]; then
  log "apt-get update"
  apt-get update -qq >&2
  choose
fi
[ -n "$major" ] || die "apt offers no PostgreSQL major with both pg_cron and pgvector (binary or buildable); check /etc/apt/sources.list*"
if ready "$major"; then
  log "PostgreSQL $major with pgvector and pg_cron is installed"
  echo "/usr/lib/postgresql/$major/bin/pg_config"
  exit 0
fi
log "chose PostgreSQL $major (pgvector $([ $build_vector = 1 ] && echo 'built from Debian source' || echo 'from apt'))"

pkgs=("postgresql-$major" "postgresql-client-$major" "postgresql-$major-cron")
if [ $build_vector = 1 ]; then
  pkgs+=("postgresql-server-dev-$major" dpkg-dev build-essential)
else
  pkgs+=("postgresql-$major-pgvector")
fi
log "apt-get update"
apt-get update -qq >&2
log "apt-get install ${pkgs[*]}"
# policy-rc.d keeps Debian from starting its own cluster service: pgmem runs its own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2

if [ $build_vector = 1 ] && [ ! -f "/usr/lib/postgresql/$major/lib/vector.so" ]; then
  src_list=/etc/apt/sources.list.d/pgmem-trixie-src.sources
  if [ ! -f "$src_list" ]; then
    # Source packages only: nothing binary comes from trixie.
    cat > "$src_list" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq >&2
  fi
  build=$(mktemp -d)
  log "building pgvector from Debian's source package in $build"
  (cd "$build" && apt-get source -qq pgvector >&2)
  srcdir=$(find "$build" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
  [ -n "$srcdir" ] || die "apt-get source pgvector produced no source tree"
  # OPTFLAGS="" avoids -march=native, so the build runs on any x86-64 CPU.
  make -C "$srcdir" -s OPTFLAGS="" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >&2
  make -C "$srcdir" -s OPTFLAGS="" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" install >&2
  rm -rf "$build"
fi

ready "$major" || die "PostgreSQL $major is still missing pgvector or pg_cron after installing"
log "PostgreSQL $major with pgvector and pg_cron is ready"
echo "/usr/lib/postgresql/$major/bin/pg_config"
