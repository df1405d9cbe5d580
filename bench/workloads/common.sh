# Shared helpers for the workload set-up scripts under bench/workloads/ (sourced, not run).
# Everything a set-up script builds goes under $WORKLOADS_CACHE, never into the source tree.
WORKLOADS_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/allocscope/workloads"

say() { printf '%s\n' "$*"; }
note() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# missing_packages PKG... — prints the Debian packages of the list that are not installed.
missing_packages() {
  [ $# -gt 0 ] || return 0
  _installed=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null |
               awk '$NF == "installed" {print $1}')
  for _p in "$@"; do
    printf '%s\n' "$_installed" | grep -qx "$_p" || printf '%s\n' "$_p"
  done
}

# need_packages PKG... — installs the missing ones with apt-get (as root), or fails with the list.
need_packages() {
  _missing=$(missing_packages "$@" | tr '\n' ' ')
  [ -z "$_missing" ] && return 0
  if ! is_root; then
    die "missing Debian packages: $_missing(install them as root: apt-get install $_missing)"
  fi
  note "installing: $_missing"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $_missing \
    >/dev/null || die "apt-get install failed for: $_missing"
}

# have_source_index PKG — true when apt knows the source package (a deb-src entry is configured).
have_source_index() {
  apt-cache showsrc "$1" 2>/dev/null | grep -q '^Version:'
}

# ensure_deb_src PKG — makes sure `apt-get source PKG` can work: if no deb-src entry lists PKG,
# adds one for the main Debian archive of this release (as root) and runs apt-get update.
ensure_deb_src() {
  have_source_index "$1" && return 0
  is_root || die "no deb-src entry lists '$1'; add a deb-src line for the Debian archive (as root)"
  . /etc/os-release
  [ -n "${VERSION_CODENAME:-}" ] || die "cannot tell the Debian release (no VERSION_CODENAME)"
  _list=/etc/apt/sources.list.d/allocscope-deb-src.sources
  note "adding a deb-src entry for Debian $VERSION_CODENAME: $_list"
  cat > "$_list" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq >/dev/null || die "apt-get update failed"
  have_source_index "$1" || die "still no source package '$1' after adding $_list"
}

# fetch_source PKG DESTDIR — `apt-get source PKG` into DESTDIR (once), trying each version apt
# knows from the newest down (a security suite's source may be listed but not downloadable).
# Prints the unpacked directory.
fetch_source() {
  _pkg=$1 _dest=$2
  mkdir -p "$_dest"
  _dir=$(find "$_dest" -mindepth 1 -maxdepth 1 -type d -name "${_pkg}-*" 2>/dev/null | sort | tail -1)
  if [ -n "$_dir" ] && [ -f "$_dest/.fetched" ]; then printf '%s\n' "$_dir"; return 0; fi
  ensure_deb_src "$_pkg"
  need_packages dpkg-dev xz-utils
  for _v in $(apt-cache showsrc "$_pkg" | awk '/^Version:/ {print $2}' | sort -rV | uniq); do
    rm -rf "${_dest:?}"/*
    if (cd "$_dest" && apt-get source -qq "$_pkg=$_v" >"$_dest/../apt-get-source.log" 2>&1); then
      touch "$_dest/.fetched"
      find "$_dest" -mindepth 1 -maxdepth 1 -type d -name "${_pkg}-*" | sort | tail -1
      return 0
    fi
    note "apt-get source $_pkg=$_v failed; trying an older version"
  done
  die "could not fetch the source package $_pkg (see $_dest/../apt-get-source.log)"
}
