#!/usr/bin/env bash
# make demo: bring up the simulated rig, read every instrument through the real drivers,
# inject a fault and watch the agent see it, clear it, and stop everything it started.
# Then run the agent daemon beside it and operate it as a technician would: status, arm, a gas
# leak that trips and latches, reset, and an e-stop. Then the main job: the seed's MoS2 task
# (configs/examples/mos2-task.json) submitted through the local control socket, approved by the
# operator (R3), followed live to its task_completed message, one artifact fetched and
# verified, and the per-tool statistics of the run's tool calls (hcp-edge tools). Needs Go only.
#
# With HCP_AMQP_URL set (the agent's broker login, e.g. from scripts/broker.sh) the agent serves
# HCP through that broker too, and the MoS2 task goes through the broker as the development
# harness harness-alpha-001 (HCP_AMQP_CALLER_URL, default: HCP_AMQP_URL with that login).
#
# RIG picks the rig (make demo RIG=graphene): mos2 (the default: rig-sim run, configs/sim.yaml,
# the seed's MoS2 task) or graphene (rig-sim run --rig graphene, configs/graphene.yaml, the
# shipped graphene-cu recipe: configs/examples/graphene-task.json) or mos2-two-zone (rig-sim run
# --rig mos2-two-zone, configs/mos2-two-zone.yaml, the shipped mos2-solid recipe on two heated
# zones: configs/examples/mos2-solid-task.json). The simulator listens on a
# Modbus TCP port of its own (port 0: the kernel picks a free one) and the agent reads a copy of
# the rig's configuration pointing at it, so a demo never meets another simulator on 5020.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
RIG=${RIG:-mos2}
case $RIG in
  mos2) rig_config=configs/sim.yaml; task=configs/examples/mos2-task.json; sim_args=(); what=MoS2 ;;
  graphene) rig_config=configs/graphene.yaml; task=configs/examples/graphene-task.json; sim_args=(--rig graphene); what=graphene ;;
  mos2-two-zone) rig_config=configs/mos2-two-zone.yaml; task=configs/examples/mos2-solid-task.json; sim_args=(--rig mos2-two-zone); what="two-zone MoS2" ;;
  *) echo "demo: RIG=$RIG: want mos2, graphene or mos2-two-zone" >&2; exit 2 ;;
esac
dir=$(mktemp -d -t hcp-demo.XXXXXX)
sim_pid=""
agent_pid=""
watch_pid=""
cleanup() {
  for pid in $watch_pid $agent_pid $sim_pid; do
    if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$dir"
}
trap cleanup EXIT

export HCP_RIG_SIM_DIR=$dir HCP_STATE_DIR=$dir/state
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# first N lines of a command's output (no SIGPIPE under pipefail)
firstlines() { local n=$1; shift; "$@" >"$dir/out.txt"; head -n "$n" "$dir/out.txt"; }

step "starting the simulated $what rig (bin/rig-sim run ${sim_args[*]+${sim_args[*]}}) in $dir"
"$BIN/rig-sim" run --dir "$dir" --modbus-addr 127.0.0.1:0 ${sim_args[@]+"${sim_args[@]}"} >"$dir/rig-sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && grep -q 'modbus tcp' "$dir/rig-sim.log" && break; sleep 0.05; done
[ -S "$dir/control.sock" ] || { cat "$dir/rig-sim.log"; echo "demo: rig-sim did not start"; exit 1; }
cat "$dir/rig-sim.log"
# The rig's configuration as shipped, but for the simulator's Modbus TCP address.
modbus=$(sed -n 's/^ *modbus tcp *\([0-9.]*:[0-9]*\).*/\1/p' "$dir/rig-sim.log" | head -n 1)
[ -n "$modbus" ] || { echo "demo: rig-sim printed no Modbus TCP address"; exit 1; }
cfg=$dir/config.yaml
sed "s/address: 127\.0\.0\.1:5020/address: $modbus/" "$rig_config" >"$cfg"
grep -q "address: $modbus" "$cfg" || { echo "demo: $rig_config has no Modbus TCP address 127.0.0.1:5020 to point at $modbus"; exit 1; }
echo "the agent reads $rig_config with the Modbus TCP address $modbus ($cfg)"

step "hcp-edge probe: every instrument through the real drivers (Modbus TCP, serial on ptys, GPIO)"
"$BIN/hcp-edge" probe --config "$cfg" --spectrum 1000

step "fault: the furnace thermocouple opens (rig-sim fault inject tc-open)"
"$BIN/rig-sim" fault inject tc-open --dir "$dir"
set +e
"$BIN/hcp-edge" probe --config "$cfg"
rc=$?
set -e
[ "$rc" = 1 ] || { echo "demo: probe should have failed (exit 1) with the thermocouple open, got $rc"; exit 1; }

step "fault cleared: the furnace answers again"
"$BIN/rig-sim" fault clear tc-open --dir "$dir"
firstlines 20 "$BIN/hcp-edge" probe --config "$cfg" --json
echo "..."

step "commissioning: hcp-edge probe --write-check (the daemon not yet running): relay, heater and reactive flows to safe, then each output to its other level and back, read back"
"$BIN/hcp-edge" probe --config "$cfg" --write-check --operator demo | sed -n '/^WRITE CHECK/,$p'

step "starting the agent: hcp-edge run (interlock, trip monitor, control socket)"
"$BIN/hcp-edge" run --config "$cfg" >"$dir/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 100); do [ -S "$HCP_STATE_DIR/control.sock" ] && break; sleep 0.05; done
[ -S "$HCP_STATE_DIR/control.sock" ] || { cat "$dir/agent.log"; echo "demo: the agent did not start"; exit 1; }
firstlines 10 "$BIN/hcp-edge" status

step "a technician energises the interlock relay: hcp-edge arm --operator demo"
"$BIN/hcp-edge" arm --operator demo

step "fault: gas leak detected (rig-sim fault inject gas-leak): the monitor trips and latches"
"$BIN/rig-sim" fault inject gas-leak --dir "$dir"
for _ in $(seq 40); do "$BIN/hcp-edge" status --json >"$dir/out.txt"; grep -q '"latched": true' "$dir/out.txt" && break; sleep 0.05; done
firstlines 3 "$BIN/hcp-edge" status
set +e
"$BIN/hcp-edge" reset --operator demo
rc=$?
set -e
[ "$rc" != 0 ] || { echo "demo: reset should be refused while the leak persists"; exit 1; }
"$BIN/rig-sim" fault clear gas-leak --dir "$dir"
# The reset is refused until the debounced leak input reads clear again: retry, bounded.
for i in $(seq 30); do
  if "$BIN/hcp-edge" reset --operator demo >"$dir/out.txt" 2>&1; then cat "$dir/out.txt"; break; fi
  [ "$i" = 30 ] && { cat "$dir/out.txt"; echo "demo: reset still refused after the leak cleared"; exit 1; }
  sleep 0.1
done

step "emergency stop: hcp-edge estop (returns when every output reads back safe)"
"$BIN/hcp-edge" estop --operator demo
"$BIN/hcp-edge" reset --operator demo

submit=("$BIN/hcp-edge" submit "$task" --watch)
if [ -n "${HCP_AMQP_URL:-}" ]; then
  caller_url=${HCP_AMQP_CALLER_URL:-$(printf '%s' "$HCP_AMQP_URL" | sed -E 's#^(amqps?://)[^@]*@#\1harness-alpha-001:harness-alpha-dev@#')}
  sed 's/"caller_id": "local"/"caller_id": "harness-alpha-001"/' "$task" >"$dir/task.json"
  submit=("$BIN/hcp-edge" submit "$dir/task.json" --watch --broker "$caller_url")
  step "the main job: the $what task ($task), submitted THROUGH THE BROKER as harness-alpha-001"
  for _ in $(seq 100); do "$BIN/hcp-edge" status --json >"$dir/out.txt"; grep -q '"connected": true' "$dir/out.txt" && break; sleep 0.1; done
  grep -q '"connected": true' "$dir/out.txt" || { tail -20 "$dir/agent.log"; echo "demo: the agent did not reach the broker at HCP_AMQP_URL"; exit 1; }
else
  step "the main job: the $what task ($task), submitted with --watch"
fi
"$BIN/hcp-edge" arm --operator demo
# The recipe's preflight checks the relay feedback: wait until the monitor reads it back.
for _ in $(seq 100); do "$BIN/hcp-edge" status --json >"$dir/out.txt"; grep -q '"relay": "energised"' "$dir/out.txt" && break; sleep 0.05; done
# --watch prints the live progress on stderr (a progress line in a terminal, plain lines
# otherwise) and the final message as JSON on stdout.
"${submit[@]}" >"$dir/final.json" &
watch_pid=$!
# The gate assesses the task R3: it waits for a human approval. The operator finds it...
apr=""
for _ in $(seq 100); do
  "$BIN/hcp-edge" sessions --json >"$dir/out.txt"
  apr=$(sed -n 's/.*"approval_id": "\(apr-[0-9a-f]*\)".*/\1/p' "$dir/out.txt" | head -n 1)
  [ -n "$apr" ] && break; sleep 0.05
done
[ -n "$apr" ] || { cat "$dir/out.txt" "$dir/agent.log" "$dir/final.json"; echo "demo: the task did not wait for approval"; exit 1; }
sleep 0.3
printf '\n'
"$BIN/hcp-edge" sessions
step "the operator approves it: hcp-edge approve $apr --operator demo"
"$BIN/hcp-edge" approve "$apr" --operator demo
set +e
wait "$watch_pid"
rc=$?
set -e
watch_pid=""
[ "$rc" = 0 ] || { cat "$dir/final.json"; tail -20 "$dir/agent.log"; echo "demo: the task did not complete (exit $rc)"; exit 1; }

step "task_completed: the final message (keys to depth 3; the full JSON has the growth log and spectrum)"
grep -E '^ {0,6}("|[]}])' "$dir/final.json" | grep -vE '^ {5,6}[]}]' || true
uri=$(grep -o 'hcp://[^"]*growth_log[^"]*' "$dir/final.json" | head -n 1)
step "an artifact, fetched and verified against its sha256: hcp-edge artifact get $uri"
"$BIN/hcp-edge" artifact get "$uri" -o "$dir/growth_log.csv"
head -n 3 "$dir/growth_log.csv"

# The run's two plots (plain SVG artifacts), kept after the demo under build/demo/ (the
# graphene rig's under build/demo/graphene/).
plots_dir=build/demo
[ "$RIG" = mos2 ] || plots_dir=build/demo/$RIG
mkdir -p "$plots_dir"
plots=()
for name in raman_spectrum.svg process_profile.svg; do
  puri=$(grep -o "hcp://[^\"]*/artifacts/$name" "$dir/final.json" | head -n 1)
  [ -n "$puri" ] || { echo "demo: the final message lists no $name"; exit 1; }
  "$BIN/hcp-edge" artifact get "$puri" -o "$plots_dir/$name" >/dev/null
  head -c 200 "$plots_dir/$name" | grep -q '<svg' || { echo "demo: $plots_dir/$name is not an SVG"; exit 1; }
  plots+=("$plots_dir/$name")
done

step "the tool pipeline: every action of the run was a catalog tool call (hcp-edge tools)"
"$BIN/hcp-edge" tools >"$dir/tools.txt"
cat "$dir/tools.txt"
zone=furnace # the zone whose setpoint the run wrote (the two-zone rig's growth zone)
[ "$RIG" = mos2-two-zone ] && zone=growth
grep -q "^$zone.set_setpoint " "$dir/tools.txt" || { echo "demo: hcp-edge tools shows no $zone.set_setpoint call"; exit 1; }

step "stopping the agent (SIGTERM: outputs to the safe state, state file closed)"
kill -TERM "$agent_pid"; wait "$agent_pid" || true; agent_pid=""
tail -3 "$dir/agent.log"
# The daemon leaves its tool statistics in the state directory when it stops.
printf 'hcp-edge tools --state-dir (no daemon): '
"$BIN/hcp-edge" tools --state-dir "$HCP_STATE_DIR" | tail -n 1

step "what reached the firmware (rig-sim status): the writes it received"
"$BIN/rig-sim" status --dir "$dir" >"$dir/out.txt"; tail -n 12 "$dir/out.txt"

step "the run's record for a lab notebook: hcp-edge export (an .eln archive; the spectrum as JCAMP-DX)"
sid=${uri#hcp://}; sid=${sid%%/*}
eln=$plots_dir/$RIG-run.eln
rm -f "$eln" # export never replaces a file
"$BIN/hcp-edge" export "$sid" --out "$eln" --state-dir "$HCP_STATE_DIR"

# The result in one line: the material the analysis named and its layer count.
lc=$(sed -n 's/^      "layer_count": \([0-9]*\).*/\1/p' "$dir/final.json" | head -n 1)
conf=$(sed -n 's/^      "confidence": \([0-9.e-]*\).*/\1/p' "$dir/final.json" | head -n 1)
material=$(tr -d '\n ' <"$dir/final.json" | grep -o '"material":{[^}]*"name":"[^"]*"' | head -n 1 | sed 's/.*"name":"//; s/"$//')
result="layer count $lc, confidence $conf"
[ -n "$material" ] && [ -n "$lc" ] || { echo "demo: the final message names no material or layer count"; exit 1; }

printf '\ndemo: ok in %ss (rig %s): %s, %s\n' "$SECONDS" "$RIG" "$material" "$result"
printf 'the %s run'"'"'s plots (open in a browser):\n' "$what"
for p in "${plots[@]}"; do printf '  %s\n' "$(realpath "$p")"; done
printf 'the %s run'"'"'s record for an electronic lab notebook (import it as .eln: docs/RECORD.md):\n  %s\n' "$what" "$(realpath "$eln")"
