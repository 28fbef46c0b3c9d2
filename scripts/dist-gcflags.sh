#!/usr/bin/env bash
# The compiler flags of every shipped binary (`make dist`, and the builds of scripts/bench.sh,
# scripts/size-breakdown.sh and scripts/pi-sim.sh through dist/), one per line.
#
# Inlining is kept where the agent spends its time while it runs a rig, and turned off
# (`-l`) in the code it runs once or on a person's request: start-up, `config check`, the CLI
# and its previews, YAML, the TLS handshake, JSON Schema compilation, the HTTP client of the
# model router. Inlining copies a callee's body into every caller: in the cold code it buys
# nothing measurable and costs ~1.2 MB of the 12 MB the armv7 binary may take
# (docs/FOOTPRINT.md, "Where the bytes go", has the figures before and after, and the hot
# path's speed with both builds).
#
# Hot, inlined as the Go toolchain does by default:
#   the runtime, internal/..., math/bits, encoding/binary, unicode/utf8; envelope (the
#   interlock, the monitor, the trip), device, the drivers not turned off below,
#   goburrow/modbus, go.bug.st/serial; session/modelrouter (the router's per-call overhead,
#   which has a goal of its own: 20 µs p50). The lists below turn it off again in packages a
#   wider pattern here covers, each with why.
#
#   go build $(bash scripts/dist-gcflags.sh) ...
set -euo pipefail
echo "-gcflags=all=-l"
for p in \
  'runtime/...' 'sync/...' time 'internal/...' syscall os net io bufio bytes strings strconv \
  sort slices errors context math math/bits encoding/binary unicode/utf8 \
  'hcp-edge/envelope/...' 'hcp-edge/device/...' \
  'hcp-edge/drivers/...' 'github.com/goburrow/...' 'go.bug.st/...' \
  'periph.io/...' 'hcp-edge/session/analysis/...' \
  'hcp-edge/session/modelrouter'; do
  echo "-gcflags=$p="
done
# Off again where a pattern above is too wide, to keep the armv7 binary within 12 MB (FOOTPRINT,
# fifth round): instrument profiles are parsed once at start (drivers/profile), the tool
# catalog's schemas compiled once at start (device/catalog); the GPIO lines (periph.io,
# drivers/gpio, drivers/simgpio) are read at 10 Hz or on an edge; drivers/regmap decodes a poll
# in a few hundred ns against a Modbus exchange of 25-50 us, so a call more per channel is lost
# in the exchange (its modbus transport and serial line below keep inlining).
for p in hcp-edge/drivers/profile hcp-edge/device/catalog \
  'periph.io/...' hcp-edge/drivers/gpio hcp-edge/drivers/simgpio \
  hcp-edge/drivers/regmap; do
  echo "-gcflags=$p=-l"
done
# Issue 42: the rig model's loader and checks (device/rig) and the building of drivers from it
# (drivers/rigbuild) run once at start, in config check and in probe: cold code, off as it was
# in cmd/hcp-edge/internal/rigconfig, where it lived before (~12 KB of the armv7 binary).
for p in hcp-edge/device/rig hcp-edge/drivers/rigbuild; do
  echo "-gcflags=$p=-l"
done
# Sixth round (issues 33 and 36: the serial families' profiles, the graphene rig's analysis,
# plots and dashboard; FOOTPRINT): off in the standard library's packages whose own bodies are
# thin wrappers around a system call or a copy (time, net, os, syscall, io, bufio, bytes,
# strings, strconv, context, sync, math, sort, slices, errors: a hot caller still inlines their
# small functions, the flag only stops them inlining their own callees), in the Modbus framing
# and the serial drivers (microseconds of work per exchange of 5-50 ms on a 19200-baud line or
# 25-50 us on TCP), and in session/analysis (one analysis per session, 10-100 ms). Measured
# with both flag sets: idle CPU, the trip latency and the analysis's time (FOOTPRINT, sixth
# round). Kept: the runtime, internal, envelope (the interlock, the monitor and the trip: ~2.7x
# slower without), device, the other drivers, goburrow/modbus, go.bug.st/serial and
# session/modelrouter (its overhead goal, 20 us: 5.7 us inlined, 10.9 us not).
for p in time net os syscall io bufio bytes strings strconv context 'sync/...' math sort slices errors \
  hcp-edge/drivers/modbus hcp-edge/drivers/serialline \
  hcp-edge/drivers/alicat hcp-edge/drivers/tpg \
  hcp-edge/drivers/raman hcp-edge/drivers/lane \
  hcp-edge/drivers/nbio 'hcp-edge/session/analysis/...'; do
  echo "-gcflags=$p=-l"
done
