#!/usr/bin/env bash
# install-seff.sh: put Slurm's `seff` (job efficiency summary) in /usr/local/bin.
#
# Debian builds seff but ships it in no binary package; its source package has it as
# contribs/seff/seff, a Perl script that needs libslurm-perl and libslurmdb-perl. We fetch the
# source of exactly the installed Slurm version through a private apt list directory, so the
# system's apt sources and lists stay untouched.
set -euo pipefail
PROG=install-seff
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

version=$(dpkg-query -W -f='${source:Version}' slurmctld 2>/dev/null) || die "Slurm is not installed"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/src"
chown -R _apt "$work" 2>/dev/null || true   # apt downloads as _apt when it can
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$work/sources.list" <<SRC
deb-src [signed-by=$keyring] http://deb.debian.org/debian $codename $codename-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security $codename-security main
SRC
apt_private=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$work/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
apt-get "${apt_private[@]}" update -qq >"$work/apt.log" 2>&1 \
  || { tail -n 5 "$work/apt.log" >&2; die "apt-get update of the deb-src lists failed"; }
(cd "$work/src" && apt-get "${apt_private[@]}" source --download-only -qq "slurm-wlm=$version") >>"$work/apt.log" 2>&1 \
  || { tail -n 5 "$work/apt.log" >&2; die "could not download the slurm-wlm $version source package"; }
tar -xzf "$work"/src/slurm-wlm_*.orig.tar.* -C "$work/src" --wildcards '*/contribs/seff/seff' \
  || die "contribs/seff/seff is not in the slurm-wlm source package"
# Upstream seff reads $FindBin::Bin without `use FindBin`, which warns on every call.
sed 's/^use Sys::Hostname;$/&\nuse FindBin;/' "$work"/src/*/contribs/seff/seff > "$work/seff"
install -m 0755 "$work/seff" /usr/local/bin/seff
log "installed /usr/local/bin/seff from Debian's slurm-wlm $version source package"
