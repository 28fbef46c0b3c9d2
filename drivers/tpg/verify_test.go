package tpg_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/serialline/serialtest"
	"hcp-edge/drivers/tpg"
)

func verifySetup(t *testing.T, over func(req string) (string, bool)) (*tpg.Gauge, *fakeGauge, *serialtest.Peer) {
	t.Helper()
	g := &fakeGauge{pr: "0,+8.3400E-03", override: over}
	p := serialtest.NewPeer(t)
	p.Serve(split, g.handle)
	o := opts()
	o.Listen = 300 * time.Millisecond
	gauge, err := tpg.Open(p.Path(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gauge.Close() })
	return gauge, g, p
}

// data answers mnemonic m with reply (ACK, then reply to the ENQ).
func data(m, reply string) func(req string) (string, bool) {
	pending := false
	return func(r string) (string, bool) {
		switch {
		case r == m:
			pending = true
			return ackLine, true
		case r == "\x05" && pending:
			pending = false
			return reply + "\r\n", true
		}
		return "", false
	}
}

func findingOf(fs []device.Finding, setting string) (device.Finding, bool) {
	for _, f := range fs {
		if f.Setting == setting {
			return f, true
		}
	}
	return device.Finding{}, false
}

func TestVerifyMatches(t *testing.T) {
	gauge, g, _ := verifySetup(t, nil)
	fs, err := gauge.Verify(context.Background())
	if err != nil || device.MismatchError(fs) != nil {
		t.Fatalf("findings %v, %v", fs, err)
	}
	for _, s := range []string{tpg.SettingContinuous, "gauge1 gauge type (TID)", tpg.SettingUnit, tpg.SettingError} {
		if _, ok := findingOf(fs, s); !ok {
			t.Errorf("no finding %q in %v", s, fs)
		}
	}
	if f, _ := findingOf(fs, "gauge1 gauge type (TID)"); f.Found != "PKR" {
		t.Errorf("gauge type %+v", f)
	}
	// Read-only: queries and ENQ, never a parameter.
	for _, r := range g.requests() {
		if strings.Contains(r, ",") || (r != "TID" && r != "UNI" && r != "ERR" && r != "\x05") {
			t.Errorf("Verify sent %q", r)
		}
	}
	// The unit read by Verify serves the first reading.
	if _, err := gauge.ReadPressure(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyMismatches(t *testing.T) {
	for _, tc := range []struct {
		name, mnemonic, reply, setting string
	}{
		{"another gauge type", "TID", "TPR,noSEn", "gauge1 gauge type (TID)"},
		{"no gauge", "TID", "noSEn,noSEn", "gauge1 gauge type (TID)"},
		{"unit not in the profile", "UNI", "3", tpg.SettingUnit},
		{"controller error", "ERR", "1000", tpg.SettingError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gauge, _, _ := verifySetup(t, data(tc.mnemonic, tc.reply))
			fs, err := gauge.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			bad := device.Mismatches(fs)
			if len(bad) != 1 || bad[0].Setting != tc.setting || !errors.Is(device.MismatchError(fs), device.ErrMismatch) {
				t.Fatalf("mismatches %v", bad)
			}
			if !strings.Contains(bad[0].String(), "gauge: ") {
				t.Errorf("finding %q does not name the instrument", bad[0])
			}
		})
	}
}

// TestVerifyContinuousOutput: a controller in continuous output mode (COM)
// streams measurement lines unasked; Verify hears them before it sends
// anything and reports the mismatch naming the setting.
func TestVerifyContinuousOutput(t *testing.T) {
	gauge, g, p := verifySetup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond) // COM,0
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.Write([]byte("0,+8.3400E-03,5,2.0000E-2\r\n"))
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	fs, err := gauge.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bad := device.Mismatches(fs)
	if len(bad) != 1 || bad[0].Setting != tpg.SettingContinuous || !strings.Contains(bad[0].Found, "on") {
		t.Fatalf("findings %v", fs)
	}
	if r := g.requests(); len(r) != 0 {
		t.Fatalf("Verify sent %q to a streaming controller", r)
	}
}

// TestVerifyStaleLine: one line arriving as Verify starts (the reply to an
// agent killed between its query and the answer, which the simulator
// writes once the port is opened again), then silence, is not continuous
// output: it is discarded, named in the finding, and the checks go on.
func TestVerifyStaleLine(t *testing.T) {
	for try := 1; ; try++ {
		gauge, _, p := verifySetup(t, nil)
		go func() {
			time.Sleep(50 * time.Millisecond) // after the port's open flushed its input
			p.Write([]byte("0,+4.7800E-01\r\n"))
		}()
		fs, err := gauge.Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if bad := device.Mismatches(fs); len(bad) != 0 {
			t.Fatalf("mismatches %v", bad)
		}
		f, ok := findingOf(fs, tpg.SettingContinuous)
		if !ok || len(fs) < 3 {
			t.Fatalf("findings %v", fs)
		}
		if strings.Contains(f.Found, "stale") {
			return
		}
		// The line came before the port was opened and its flush took it: again.
		if try == 5 {
			t.Fatalf("the line never arrived after the open: findings %v", fs)
		}
	}
}
