package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probeJSON runs probe with args and decodes its JSON.
func probeJSON(t *testing.T, args ...string) (int, map[string]json.RawMessage, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"probe", "--json"}, args...), &out, &errOut)
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &res); err != nil && code == exitOK {
		t.Fatalf("probe output: %v\n%s", err, out.String())
	}
	return code, res, errOut.String()
}

// TestProbeReadsEveryChannel: probe reads every channel of every profiled
// instrument through its profile, each inside the device's declared range
// on a healthy rig, named as the layout names it.
func TestProbeReadsEveryChannel(t *testing.T) {
	_, cfg := startRig(t)
	code, res, stderr := probeJSON(t, "--config", cfg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []struct {
		Instrument, Profile, Channel, Name string
		InRange                            bool `json:"in_range"`
		Error                              string
	}
	if err := json.Unmarshal(res["channels"], &rows); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Profile+"/"+r.Channel] = true
		if !r.InRange || r.Error != "" {
			t.Errorf("%s %s: in range %v, error %q", r.Instrument, r.Channel, r.InRange, r.Error)
		}
	}
	for _, want := range []string{"hcp-sim-tc/pv", "hcp-sim-tc/watchdog_kick", "hcp-sim-dio/coil6", "hcp-sim-dio/di2",
		"hcp-sim-mfc/mass_flow", "hcp-sim-mfc/gas", "hcp-sim-gauge/gauge1"} {
		if !seen[want] {
			t.Errorf("channel %s not read", want)
		}
	}
	if len(rows) != 13+10+3*6+1 {
		t.Errorf("%d channels read, want the profiles' 42 (3 mass-flow controllers of 6 columns, 1 gauge)", len(rows))
	}
}

// TestProbeWriteCheck: --write-check moves toward safe first, then drives
// every output to its other level and back, each read back, and leaves each
// as found; an output whose channel the module does not answer is reported
// unconfirmed (exit 1). Without --operator nothing is written.
func TestProbeWriteCheck(t *testing.T) {
	r, cfg := startRig(t)
	seq, _ := r.Plant().WriteLogStats()
	if code, _, stderr := probeJSON(t, "--config", cfg, "--write-check"); code != exitFailure || !strings.Contains(stderr, "--operator") {
		t.Fatalf("without --operator: exit %d, %s", code, stderr)
	}
	for _, w := range r.Plant().Writes(seq) {
		if w.Device != "gauge" {
			t.Errorf("refused write check wrote: %+v", w)
		}
	}
	before := r.Plant().Snapshot().Coils
	seq, _ = r.Plant().WriteLogStats()
	code, res, stderr := probeJSON(t, "--config", cfg, "--write-check", "--operator", "tess")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Prepared []string
		Outputs  []struct {
			Name      string
			Confirmed bool
		}
		Unconfirmed []string
	}
	if err := json.Unmarshal(res["write_check"], &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Outputs) != 7 || len(rep.Unconfirmed) != 0 || len(rep.Prepared) == 0 {
		t.Fatalf("report %+v", rep)
	}
	writes := map[string]int{}
	for _, w := range r.Plant().Writes(seq) {
		if w.Device == "dio" && w.Accepted {
			writes[strings.TrimPrefix(w.Channel, "coil:")]++
		}
	}
	for name := range before {
		if writes[name] < 2 {
			t.Errorf("%s written %d times, want its other level and back", name, writes[name])
		}
	}
	if after := r.Plant().Snapshot().Coils; !equalLevels(before, after) {
		t.Errorf("outputs not left as found: %v, then %v", before, after)
	}

	// An output on a channel the module does not have: not confirmed.
	dir := t.TempDir()
	prof, err := os.ReadFile("../../configs/profiles/hcp-sim-dio.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prof = append(prof, []byte("  - {name: coil7, table: coil, address: 7, type: bool, access: read_write, role: output}\n")...)
	if err := os.WriteFile(filepath.Join(dir, "wrong-dio.yaml"), prof, 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg)
	c := strings.Replace(string(b), "profile: hcp-sim-dio}", "profile: wrong-dio}", 1)
	c = strings.Replace(c, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n    spare: {channel: coil7, safe: \"off\"}\n", 1)
	wrong := filepath.Join(t.TempDir(), "wrong.yaml")
	if err := os.WriteFile(wrong, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	code, res, stderr = probeJSON(t, "--config", wrong, "--write-check", "--operator", "tess")
	if code != exitFailure {
		t.Fatalf("a miswired output: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal(res["write_check"], &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Unconfirmed) != 1 || rep.Unconfirmed[0] != "spare" {
		t.Fatalf("unconfirmed %v, want [spare]", rep.Unconfirmed)
	}
}

func equalLevels(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
