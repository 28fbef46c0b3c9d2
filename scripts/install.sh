#!/usr/bin/env bash
# install.sh — install hcp-edge from `make dist` on this machine (Raspberry Pi or industrial PC).
#
#   sudo scripts/install.sh [--dry-run] [--binary PATH] [--enable]
#
# Installs the binary to /usr/local/bin/hcp-edge; creates the group hcp-edge (the control
# socket's: operators join it), the system user hcp-edge (no login, no home), the gpio group if
# missing (the unit's SupplementaryGroups needs it);
# /etc/hcp-edge (0750 root:hcp-edge) with the example configuration as hcp-edge.yaml and the
# capability declarations, both only if absent (an existing configuration is never touched);
# and the hardened systemd unit /etc/systemd/system/hcp-edge.service. Idempotent: running it
# again changes only what differs. --dry-run prints every step without doing it (no root
# needed). --enable also enables and starts the service. Without root (and without --dry-run)
# it refuses.
#
# Exit codes: 0 installed (or would be); 1 a step failed; 2 usage, not root, or no binary.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dry=0 enable=0 binary=""
PREFIX=${HCP_INSTALL_ROOT:-}   # testing only: install under this directory instead of /

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --enable) enable=1 ;;
    --binary) shift; binary=${1:-} ;;
    --binary=*) binary=${1#--binary=} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ "$dry" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "install.sh: must run as root (sudo $0 $*), or with --dry-run to see the steps" >&2
  exit 2
fi
if [ -z "$binary" ]; then
  case "$(uname -m)" in
    x86_64|amd64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    armv7l|armv6l|armhf|arm) arch=arm ;;
    *) echo "install.sh: unsupported machine $(uname -m); pass --binary PATH" >&2; exit 2 ;;
  esac
  binary="$root/dist/linux-$arch/hcp-edge"
fi
if [ ! -x "$binary" ]; then
  echo "install.sh: no binary at $binary (run make dist, or pass --binary PATH)" >&2
  exit 2
fi

bin_dst="$PREFIX/usr/local/bin/hcp-edge"
etc="$PREFIX/etc/hcp-edge"
unit_dst="$PREFIX/etc/systemd/system/hcp-edge.service"

# step runs a command, or prints it under --dry-run.
step() {
  if [ "$dry" = 1 ]; then echo "would: $*"; else echo "+ $*"; "$@"; fi
}
# same reports whether file $2 exists with the content of $1.
same() { [ -f "$2" ] && cmp -s "$1" "$2"; }

echo "hcp-edge install: $("$binary" version 2>/dev/null || echo "$binary")"

# 1. The binary.
if same "$binary" "$bin_dst"; then echo "ok: $bin_dst is up to date"
else step install -D -m 0755 "$binary" "$bin_dst"; fi

# 2. The system user and groups.
if getent group gpio >/dev/null; then echo "ok: group gpio exists"
else step groupadd --system gpio; fi
# The hcp-edge group owns the control socket (mode 0660): its members reach it. What each may do
# there is the configuration's operators section (docs/SAFETY.md, Operators and roles).
if getent group hcp-edge >/dev/null; then echo "ok: group hcp-edge exists"
else step groupadd --system hcp-edge; fi
if getent passwd hcp-edge >/dev/null; then echo "ok: user hcp-edge exists"
else step useradd --system --gid hcp-edge --no-create-home --home-dir /var/lib/hcp-edge \
  --shell /usr/sbin/nologin --comment "hcp-edge agent" hcp-edge; fi

# 3. The configuration directory: never overwrite what is there.
if [ -d "$etc" ]; then echo "ok: $etc exists"
else step install -d -m 0750 -o root -g hcp-edge "$etc"; fi
if [ -e "$etc/hcp-edge.yaml" ]; then echo "ok: $etc/hcp-edge.yaml exists (kept as is)"
else step install -m 0640 -o root -g hcp-edge "$root/configs/hcp-edge.example.yaml" "$etc/hcp-edge.yaml"; fi
if [ -e "$etc/capabilities" ]; then echo "ok: $etc/capabilities exists (kept as is)"
else
  step install -d -m 0750 -o root -g hcp-edge "$etc/capabilities"
  for f in "$root"/configs/capabilities/*.json; do
    step install -m 0640 -o root -g hcp-edge "$f" "$etc/capabilities/"
  done
fi

# 4. The systemd unit.
if same "$here/hcp-edge.service" "$unit_dst"; then echo "ok: $unit_dst is up to date"
else
  step install -D -m 0644 "$here/hcp-edge.service" "$unit_dst"
  if [ -d /run/systemd/system ] && [ -z "$PREFIX" ]; then step systemctl daemon-reload; fi
fi

# 5. Check the configuration as the service will (warn only: edit it, then start).
if [ "$dry" = 0 ]; then
  if "$bin_dst" config check --capabilities "$etc/capabilities" "$etc/hcp-edge.yaml"; then :
  else echo "install.sh: fix $etc/hcp-edge.yaml before starting the service" >&2; fi
else
  echo "would: $bin_dst config check --capabilities $etc/capabilities $etc/hcp-edge.yaml"
fi

echo "operators: add each technician's own account to the group (usermod -aG hcp-edge NAME) and to"
echo "  the operators section of $etc/hcp-edge.yaml with its roles; without that section only root"
echo "  holds roles (docs/SAFETY.md, Operators and roles)"

if [ "$enable" = 1 ]; then
  if [ -d /run/systemd/system ] && [ -z "$PREFIX" ]; then step systemctl enable --now hcp-edge.service
  else echo "install.sh: systemd is not running here: not enabling" >&2; fi
fi

cat <<NEXT
next:
  edit $etc/hcp-edge.yaml (serial ports, Modbus gateway, envelope), then
  hcp-edge config check $etc/hcp-edge.yaml
  systemctl enable --now hcp-edge        # or: $0 --enable
  usermod -aG hcp-edge <operator>        # to use hcp-edge status/estop/reset on the control socket
NEXT
