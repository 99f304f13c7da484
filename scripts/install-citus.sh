#!/usr/bin/env bash
# Builds and installs Citus 13.2.2 from the vendored, unmodified source for the
# PostgreSQL that scripts/install-postgres.sh chose. Debian ships no Citus
# package. Only `make citus` runs this: `make demo`/`make setup` stay fast.
#
#   - source: $CITUS_TARBALL, else ../shared/vendor/citus-13.2.2.tar.gz next
#     to the repository (checked against its sha256);
#   - build tree outside the repository: $CITUS_BUILD_DIR (/var/tmp/pgmem-citus);
#   - scripts/citus-pg15-have-createdb-privilege.patch is applied only when the
#     server's commands/dbcommands.h exports have_createdb_privilege() on
#     PostgreSQL 15 (15.20 does): Citus' own static copy then clashes with it.
#     PostgreSQL 16+ takes the server's function already: no patch there.
#   - scripts/citus-insert-select-rls.patch always: an INSERT ... SELECT that
#     Citus runs through the coordinator COPYs into the shards, and PostgreSQL
#     refuses COPY FROM where row-level security applies (every pgmem tenant
#     table); the patch sends those through intermediate results and a
#     distributed INSERT ... SELECT, as Citus already does for ON CONFLICT.
# Installs nothing when this Citus, built with these patches, is installed
# (a stamp file next to citus.so records them).
set -euo pipefail

log() { echo "install-citus: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs Debian packages), e.g. sudo make citus"
repo=$(cd "$(dirname "$0")/.." && pwd)
version=13.2.2
sha256=c8fc76dc8294636a52b1a0dd75a20d8b4a36937df6443e30ca84d8d0464a6bb9

pg_config=${PG_CONFIG:-$(bash "$repo/scripts/install-postgres.sh" | tail -n1)}
[ -x "$pg_config" ] || die "no pg_config at '$pg_config'"
major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
libdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)

stamp="$libdir/citus.pgmem-build"
build_id="citus $version; $(cat "$repo"/scripts/citus-*.patch | sha256sum | cut -d' ' -f1)"
if [ -f "$libdir/citus.so" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$build_id" ]; then
  log "Citus $version (pgmem patches) is installed for PostgreSQL $major"
  exit 0
fi
case "$major" in 15|16|17) ;; *) die "Citus $version supports PostgreSQL 15-17, not $major" ;; esac

tarball=${CITUS_TARBALL:-}
if [ -z "$tarball" ]; then
  for c in "$repo/../shared/vendor/citus-$version.tar.gz" "$repo/../../shared/vendor/citus-$version.tar.gz"; do
    [ -f "$c" ] && { tarball=$c; break; }
  done
fi
[ -n "$tarball" ] && [ -f "$tarball" ] || die "no citus-$version.tar.gz: set CITUS_TARBALL to the vendored source"
echo "$sha256  $tarball" | sha256sum -c --quiet - || die "$tarball is not the vendored Citus $version source (sha256 differs)"

export DEBIAN_FRONTEND=noninteractive
deps=(libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev
      libxslt1-dev libpam0g-dev libreadline-dev "postgresql-server-dev-$major" build-essential)
missing=()
for p in "${deps[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; }
fi

build=${CITUS_BUILD_DIR:-/var/tmp/pgmem-citus}
rm -rf "$build" && mkdir -p "$build"
tar xzf "$tarball" -C "$build"
src="$build/citus-$version"
if [ "$major" = 15 ] && grep -q 'have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h"; then
  log "applying citus-pg15-have-createdb-privilege.patch (the server exports have_createdb_privilege)"
  patch -s -d "$src" -p1 < "$repo/scripts/citus-pg15-have-createdb-privilege.patch"
fi
patch -s -d "$src" -p1 < "$repo/scripts/citus-insert-select-rls.patch"
log "building Citus $version for PostgreSQL $major in $src"
(cd "$src" && ./configure -q PG_CONFIG="$pg_config" >&2 \
  && nice -n 10 make -s -j"$(nproc)" >&2 && make -s install >&2)
[ -f "$libdir/citus.so" ] || die "the build installed no citus.so in $libdir"
echo "$build_id" > "$stamp"
log "Citus $version is ready for PostgreSQL $major"
