package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/firmware-sim/modbussim"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/internal/syncbuf"
)

func TestRunAndSubcommands(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer // run writes them from its goroutine while the test reads
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--dir", dir, "--modbus-addr", "127.0.0.1:0", "--time-scale", "600"}, &out, &errOut)
	}()
	sock := filepath.Join(dir, "control.sock")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no control socket; stderr %s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cli := func(args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		if err := run(context.Background(), append(args, "--dir", dir), &o, &e); err != nil {
			t.Fatalf("%v: %v %s", args, err, e.String())
		}
		return o.String()
	}
	if got := cli("gpio", "set", "relay", "1"); got != "relay 1\n" {
		t.Fatalf("gpio set: %q", got)
	}
	if got := cli("gpio", "get", "relay_fb"); got != "relay_fb 1\n" {
		t.Fatalf("gpio get: %q", got)
	}
	cli("fault", "inject", "silent", "--target", "furnace")
	if got := cli("faults"); !strings.Contains(got, "silent\tfurnace") {
		t.Fatalf("faults: %q", got)
	}
	cli("fault", "clear", "all")
	if got := cli("status"); !strings.Contains(got, "relay=1") || !strings.Contains(got, "write log   1 entries") {
		t.Fatalf("status: %s", got)
	}
	if got := cli("precursor"); got != "precursor MoO3\n" {
		t.Fatalf("precursor: %q", got)
	}
	if got := cli("precursor", "wo3"); got != "precursor WO3\n" {
		t.Fatalf("precursor wo3: %q", got)
	}
	if got := cli("status"); !strings.Contains(got, "material none (MoS2 0.000, WS2 0.000), precursor WO3") {
		t.Fatalf("status after precursor: %s", got)
	}
	if got := cli("status", "--json"); !strings.Contains(got, `"writes":[{"seq":1`) {
		t.Fatalf("status --json: %s", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
	if !strings.Contains(out.String(), "modbus tcp") {
		t.Fatalf("banner: %s", out.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestRunRejectsUnknownPrecursor(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"run", "--dir", t.TempDir(), "--modbus-addr", "127.0.0.1:0", "--precursor", "V2O5"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "V2O5") {
		t.Fatalf("err %v", err)
	}
}

// TestRunRelayWatchdog runs rig-sim with --relay-watchdog and drives its
// GPIO with the sub-commands: with heartbeat edges the relay energises;
// without them it drops within the timeout (plus a physics tick) and status
// reports the drop.
func TestRunRelayWatchdog(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer // run writes them from its goroutine while the test reads
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--dir", dir, "--modbus-addr", "127.0.0.1:0", "--relay-watchdog", "300ms"}, &out, &errOut)
	}()
	// stop cancels run and waits for it, once: at the end, before the banner
	// is read, and on a failure before that.
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("run did not stop")
		}
	})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	sock := filepath.Join(dir, "control.sock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control socket; stderr %s", errOut.String())
		}
	}
	cli := func(args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		if err := run(context.Background(), append(args, "--dir", dir), &o, &e); err != nil {
			t.Fatalf("%v: %v %s", args, err, e.String())
		}
		return o.String()
	}
	cli("gpio", "set", "heartbeat", "1")
	cli("gpio", "set", "relay", "1")
	if got := cli("gpio", "get", "relay_fb"); got != "relay_fb 1\n" {
		t.Fatalf("relay_fb after a heartbeat edge and relay 1: %q", got)
	}
	t0 := time.Now()
	for cli("gpio", "get", "relay_fb") != "relay_fb 0\n" {
		if time.Since(t0) > 10*time.Second {
			t.Fatal("relay never dropped without a heartbeat")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := cli("status"); !strings.Contains(got, "watchdog    relay: timeout 300 ms, heartbeat alive false (1 edges") ||
		!strings.Contains(got, "drops 1") || !strings.Contains(got, "relay=1") || !strings.Contains(got, "relay_fb=0") {
		t.Fatalf("status: %s", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "relay watchdog 300ms") {
		t.Fatalf("banner: %s", out.String())
	}
}

func TestRunRejectsNegativeRelayWatchdog(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"run", "--dir", t.TempDir(), "--modbus-addr", "127.0.0.1:0", "--relay-watchdog", "-1s"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--relay-watchdog") {
		t.Fatalf("err %v", err)
	}
}

// TestRunGrapheneRig: --rig graphene alone brings up the graphene rig with
// the instruments configs/graphene.yaml names.
func TestRunGrapheneRig(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer // run writes them from its goroutine while the test reads
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--rig", "graphene", "--dir", dir, "--modbus-addr", "127.0.0.1:0"}, &out, &errOut)
	}()
	sock := filepath.Join(dir, "control.sock")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control socket; stderr %s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var o, e bytes.Buffer
	if err := run(context.Background(), []string{"status", "--dir", dir}, &o, &e); err != nil {
		t.Fatalf("status: %v %s", err, e.String())
	}
	st := o.String()
	for _, want := range []string{"furnace eurotherm3200, dio adam6052", "mfc ch4 ", "relay: timeout 2000 ms", "rig graphene: 0.000 layers"} {
		if !strings.Contains(st, want) {
			t.Fatalf("status lacks %q:\n%s", want, st)
		}
	}
	if strings.Contains(st, "mfc h2s") {
		t.Fatalf("the graphene rig has an H2S controller:\n%s", st)
	}
	for _, l := range []string{"mfc-ar", "mfc-h2", "mfc-ch4", "gauge", "raman"} {
		if _, err := os.Lstat(filepath.Join(dir, l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "mfc-h2s")); !os.IsNotExist(err) {
		t.Fatalf("mfc-h2s on the graphene rig: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
	if !strings.Contains(out.String(), "rig graphene") || !strings.Contains(out.String(), "mfc-ch4") {
		t.Fatalf("banner: %s", out.String())
	}
	var e2 bytes.Buffer
	if err := run(context.Background(), []string{"run", "--rig", "sapphire", "--dir", t.TempDir()}, &bytes.Buffer{}, &e2); err == nil || !strings.Contains(err.Error(), "unknown rig") {
		t.Fatalf("--rig sapphire: %v", err)
	}
}

// TestRunTwoZoneRig: --rig mos2-two-zone alone brings up the two-zone
// furnace: its RS-485 line on <dir>/modbus-rtu with the sulfur zone's 3200
// at unit 1 and the growth zone's at unit 2, one MFC (Ar), a TPG 262, and
// status shows both zones.
func TestRunTwoZoneRig(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer // run writes them from its goroutine while the test reads
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--rig", "mos2-two-zone", "--dir", dir, "--modbus-addr", "127.0.0.1:0"}, &out, &errOut)
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("run did not stop")
		}
	})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	sock := filepath.Join(dir, "control.sock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control socket; stderr %s", errOut.String())
		}
	}
	// write the sulfur zone's TG.SP (180.0 °C) at unit 1 over the line
	f, err := os.OpenFile(filepath.Join(dir, "modbus-rtu"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := []byte{1, modbussim.FCWriteSingleReg, 0, plant.EuroTargetSP, 0x07, 0x08}
	crc := modbussim.CRC16(req)
	req = append(req, byte(crc), byte(crc>>8))
	if _, err := f.Write(req); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, len(req))
	_ = f.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(f, echo); err != nil || !bytes.Equal(echo, req) {
		t.Fatalf("unit 1's echo % x %v, want % x", echo, err, req)
	}
	var o, e bytes.Buffer
	if err := run(context.Background(), []string{"status", "--dir", dir}, &o, &e); err != nil {
		t.Fatalf("status: %v %s", err, e.String())
	}
	st := o.String()
	for _, want := range []string{"zone sulfur  unit 1 furnace-sulfur:", "sp 180.0 °C", "zone growth  unit 2 furnace-growth:", "mfc ar ", "sulfur zone ", "MoO3 supply 1.000"} {
		if !strings.Contains(st, want) {
			t.Fatalf("status lacks %q:\n%s", want, st)
		}
	}
	for _, l := range []string{"mfc-ar", "gauge", "raman", "modbus-rtu"} {
		if _, err := os.Lstat(filepath.Join(dir, l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	for _, l := range []string{"mfc-h2", "mfc-h2s"} {
		if _, err := os.Lstat(filepath.Join(dir, l)); !os.IsNotExist(err) {
			t.Fatalf("%s on the two-zone rig: %v", l, err)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rig mos2-two-zone", "gauge tpg262", "unit 1 sulfur zone (furnace-sulfur), unit 2 growth zone (furnace-growth)", "modbus tcp", "(unit 2 dio)"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("banner lacks %q: %s", want, out.String())
		}
	}
	var e2 bytes.Buffer
	if err := run(context.Background(), []string{"run", "--rig", "mos2-two-zone", "--furnace-model", "sim", "--dir", t.TempDir(), "--modbus-addr", "127.0.0.1:0"}, &bytes.Buffer{}, &e2); err == nil || !strings.Contains(err.Error(), "Eurotherm 3200") {
		t.Fatalf("--rig mos2-two-zone --furnace-model sim: %v", err)
	}
}
