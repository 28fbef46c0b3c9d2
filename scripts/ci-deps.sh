#!/usr/bin/env bash
# Installs with apt the peer programs the tests need: programs nobody here wrote, to prove
# interoperability (mbpoll, pymodbus), pty plumbing (socat), and qemu-user for the
# cross-built binaries. Idempotent: installs only what is missing.
set -euo pipefail
pkgs=(mbpoll python3-pymodbus socat qemu-user-static python3-pika)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "ci-deps: all present (${pkgs[*]})"; exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "ci-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "ci-deps: installed ${missing[*]}"
