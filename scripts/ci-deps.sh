#!/usr/bin/env bash
# Installs with apt the peer programs the tests need: programs nobody here wrote, to prove
# interoperability (mbpoll, pymodbus, pika, aiosmtpd: the alerts' SMTP server), pty plumbing (socat), and qemu-user for the
# cross-built binaries; and with npm, @dwmkerr/mock-llm (an OpenAI-compatible server), ro-crate and
# jcampconverter (the .eln export's readers) into ~/.cache/hcp-edge/npm. Idempotent: installs only what is missing.
#
# Then it runs each peer's own probe — the very import or command the tests use — and fails at
# once, naming the package to add, when one does not work. A package that is installed but
# cannot run (a Recommends left out by --no-install-recommends, say) is caught here, not as a
# confusing test failure twenty minutes later.
#
# chromium (Debian's browser; the dashboard test drives it headless over the DevTools protocol
# with chromedp, so chromium-driver is not needed) and fonts-dejavu-core (the screenshots need a
# font; chromium only recommends one).
#
# python3-pymodbus 3.0 (Debian 12) needs python3-serial-asyncio (and with it python3-serial) for
# `import pymodbus.server`; it is only a Recommends of the package, so it is listed explicitly.
set -euo pipefail
pkgs=(mbpoll python3-pymodbus python3-serial python3-serial-asyncio socat qemu-user-static python3-pika python3-aiosmtpd chromium fonts-dejavu-core)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "ci-deps: all present (${pkgs[*]})"
else
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  echo "ci-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "ci-deps: installed ${missing[*]}"
fi

# Probes: the same imports and commands the tests run (the tests use /usr/bin/python3, Debian's
# interpreter, not whatever python3 comes first on PATH).
py=/usr/bin/python3
failed=0
probe() { # package description command...
  local pkg=$1 what=$2; shift 2
  local out
  if out=$("$@" 2>&1); then
    echo "ci-deps: ok   $what"
  else
    echo "ci-deps: FAIL $what — add the Debian package $pkg to scripts/ci-deps.sh" >&2
    printf '%s\n' "$out" | tail -n 3 | sed 's/^/ci-deps:        /' >&2
    failed=1
  fi
}
probe python3-pymodbus         "python3: import pymodbus.server"   "$py" -c 'import pymodbus.server'
probe python3-pymodbus         "python3: import pymodbus.client"   "$py" -c 'import pymodbus.client'
probe python3-serial-asyncio   "python3: import serial_asyncio"    "$py" -c 'import serial_asyncio'
probe python3-pika             "python3: import pika"              "$py" -c 'import pika'
probe python3-aiosmtpd         "python3: import aiosmtpd"          "$py" -c 'import aiosmtpd'
probe mbpoll                   "mbpoll -h"                         mbpoll -h
probe socat                    "socat -V"                          socat -V
probe qemu-user-static         "qemu-arm-static --version"         qemu-arm-static --version
probe qemu-user-static         "qemu-aarch64-static --version"     qemu-aarch64-static --version
# The flags the dashboard test starts it with (no sandbox as root, no background networking on
# a closed network, a fresh profile); it must render a page headless.
chromium_probe() {
  local prof; prof=$(mktemp -d)
  timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
    --user-data-dir="$prof" --dump-dom 'data:text/html,<p id=probe>chromium-ok</p>' 2>/dev/null | grep -q chromium-ok
  local rc=$?; rm -rf "$prof"; return $rc
}
probe chromium                 "chromium --headless --dump-dom"    chromium_probe

# @dwmkerr/mock-llm, an OpenAI-compatible server nobody here wrote (the model router's peer test,
# session/modelrouter TestMockLLMPeer), installed with the machine's node and npm (Debian's npm
# when there is none) into a cache directory, pinned: the test finds it there (or $HCP_MOCK_LLM).
MOCK_LLM_VERSION=0.1.29
MOCK_LLM_PREFIX=${HCP_NPM_PREFIX:-$HOME/.cache/hcp-edge/npm}
if ! command -v npm >/dev/null; then
  SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  echo "ci-deps: installing npm (Debian) for mock-llm"
  $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
mock_llm_version() {
  node -e 'console.log(require(process.argv[1]).version)' "$MOCK_LLM_PREFIX/node_modules/@dwmkerr/mock-llm/package.json" 2>/dev/null
}
if [ "$(mock_llm_version)" != "$MOCK_LLM_VERSION" ]; then
  echo "ci-deps: installing @dwmkerr/mock-llm@$MOCK_LLM_VERSION into $MOCK_LLM_PREFIX"
  mkdir -p "$MOCK_LLM_PREFIX"
  npm install --prefix "$MOCK_LLM_PREFIX" --no-audit --no-fund --loglevel=error "@dwmkerr/mock-llm@$MOCK_LLM_VERSION" >/dev/null
fi
mock_llm_probe() { [ "$(mock_llm_version)" = "$MOCK_LLM_VERSION" ] && [ -x "$MOCK_LLM_PREFIX/node_modules/.bin/mock-llm" ]; }
probe "npm @dwmkerr/mock-llm"  "mock-llm $MOCK_LLM_VERSION in $MOCK_LLM_PREFIX" mock_llm_probe
# The .eln export's peers (cmd/hcp-edge TestExportThroughCLI, via testdata/eln-check.mjs): the npm
# ro-crate library (loads and validates the crate, walks its File entities) and jcampconverter
# (parses JCAMP-DX), pinned, into the same prefix.
ELN_PEERS=("ro-crate@3.7.2" "jcampconverter@12.5.3")
npm_version() { node -e 'console.log(require(process.argv[1]).version)' "$MOCK_LLM_PREFIX/node_modules/$1/package.json" 2>/dev/null; }
for spec in "${ELN_PEERS[@]}"; do
  if [ "$(npm_version "${spec%@*}")" != "${spec##*@}" ]; then
    echo "ci-deps: installing $spec into $MOCK_LLM_PREFIX"
    npm install --prefix "$MOCK_LLM_PREFIX" --no-audit --no-fund --loglevel=error "$spec" >/dev/null
  fi
  probe "npm $spec" "$spec in $MOCK_LLM_PREFIX" test "$(npm_version "${spec%@*}")" = "${spec##*@}"
done
if [ "$failed" != 0 ]; then
  echo "ci-deps: a peer does not work; see the lines above" >&2
  exit 1
fi
