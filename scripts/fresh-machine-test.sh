#!/usr/bin/env bash
# The README's test command on a fresh Debian 12 machine (issue 40): a minimal bookworm chroot
# made with debootstrap (Python, venv, git and CA certificates only: what "only Python and the
# network to the package registries" leaves), a fresh clone of this repository's HEAD inside
# it, then `bash scripts/test.sh` there as root, so that its apt step must install every system
# library the tests need (nothing installed by hand can leak in from this machine).
#
#   sudo bash scripts/fresh-machine-test.sh [CHROOT_DIR]       # default /srv/sparcdesk-fresh
#
# Bound into the chroot: /proc, /sys, /dev (the tests start processes and use /dev/shm),
# ../shared/data read-only (tests that need it skip without it), the host's resolv.conf, and,
# where this machine has them, the registries it reaches PyPI through: its local mirrors
# (/opt/wheels, /opt/pypi*), its pip configuration (/etc/pip.conf, /etc/xdg/pip,
# /root/.config/pip) and the CA bundle its proxy needs. Without them pip goes to PyPI itself,
# where torch==2.13.0 for Linux is the CUDA build (4.7 GB with its nvidia-* wheels, measured in
# this chroot; it runs on the CPU too). Needs root and debootstrap.
# The chroot is made once and reused (apt and pip state persist there between runs: delete
# the folder for a clean run); the clone is made afresh every time.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
ROOTFS=${1:-/srv/sparcdesk-fresh}
[ "$(id -u)" = 0 ] || { echo "run as root (chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
if [ ! -x "$ROOTFS/usr/bin/python3" ]; then
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,git,ca-certificates \
    bookworm "$ROOTFS" http://deb.debian.org/debian
fi
# debootstrap writes no /etc/hosts; an installed machine has one naming localhost (the
# trainer's two-process tests rendezvous on it): the host's, as its network is the chroot's
# (a written Debian default, with ::1 first for localhost, hung those tests in a sandbox
# without IPv6 loopback)
mounts=()
bind() {  # bind SRC onto the same path in the chroot (read-only with "ro")
  local src=$1 dst="$ROOTFS$1"
  [ -e "$src" ] || return 0
  if [ -d "$src" ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; touch "$dst"; fi
  mount --bind "$src" "$dst"
  if [ "${2:-}" = ro ]; then mount -o remount,bind,ro "$dst"; fi
  mounts+=("$dst")
}
cleanup() { for ((i=${#mounts[@]}-1; i>=0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT
trap "exit 130" INT TERM  # so that a stopped run unmounts too
bind /proc; bind /sys; bind /dev; bind /dev/pts
bind /etc/resolv.conf ro
[ -e "$ROOTFS/etc/hosts" ] || touch "$ROOTFS/etc/hosts"
bind /etc/hosts ro
for p in /opt/wheels /opt/pypi /opt/pypi-more /etc/pip.conf /etc/xdg/pip /root/.config/pip /etc/ssl/certs/ca-certificates.crt; do
  bind "$p" ro
done
DATA=$(cd "$REPO/.." && pwd)/shared/data
bind "$DATA" ro
# a fresh clone of HEAD beside ../shared/data, as a checkout sits here
CLONE="$(dirname "$REPO")/sparcdesk-fresh"
rm -rf "$ROOTFS$CLONE"
mkdir -p "$(dirname "$ROOTFS$CLONE")"
git clone -q "$REPO" "$ROOTFS$CLONE"
start=$(date +%s)
chroot "$ROOTFS" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 bash -c "cd '$CLONE' && bash scripts/test.sh"
echo "fresh-machine test passed in $(( $(date +%s) - start )) s (chroot $ROOTFS, Debian $(cat "$ROOTFS/etc/debian_version"))"
