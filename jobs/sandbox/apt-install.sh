#!/usr/bin/env bash
# apt-install.sh PKG... : install Debian packages quietly, skipping those already installed.
# Runs `apt-get update` at most once (and not at all when nothing is missing). No recommends.
set -euo pipefail
PROG=apt-install
die() { echo "$PROG: ERROR: $*" >&2; exit 1; }

[ $# -gt 0 ] || die "usage: apt-install.sh PKG..."
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$pkg")
done
[ ${#missing[@]} -gt 0 ] || exit 0
[ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
command -v apt-get >/dev/null || die "apt-get not found: install ${missing[*]} with your system's package manager"

logfile=$(mktemp /tmp/apt-install.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
echo "$PROG: installing ${missing[*]} (log: $logfile)"
apt-get update -q >"$logfile" 2>&1 || { tail -n 5 "$logfile" >&2; die "apt-get update failed (log: $logfile)"; }
# --force-unsafe-io: dpkg skips its fsync calls, which take most of an install's time on VMs.
apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >>"$logfile" 2>&1 \
  || { tail -n 10 "$logfile" >&2; die "apt-get install ${missing[*]} failed (log: $logfile)"; }
rm -f "$logfile"
