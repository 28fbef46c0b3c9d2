package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/device/devicetest"
	"hcp-edge/transport/caller"
)

// npmPeers is where scripts/ci-deps.sh installs the npm peers (or
// $HCP_NPM_PREFIX).
func npmPeers(t *testing.T) string {
	t.Helper()
	prefix := os.Getenv("HCP_NPM_PREFIX")
	if prefix == "" {
		home, _ := os.UserHomeDir()
		prefix = filepath.Join(home, ".cache", "hcp-edge", "npm")
	}
	mods := filepath.Join(prefix, "node_modules")
	devicetest.Hidden(t, "npm ro-crate and jcampconverter, node", "make ci-deps installs them with the machine's npm")
	for _, p := range []string{"ro-crate/package.json", "jcampconverter/dist/jcampconverter.js"} {
		if _, err := os.Stat(filepath.Join(mods, p)); err != nil {
			devicetest.MissingPeer(t, "npm ro-crate 3.7.2 and jcampconverter 12.5.3 in "+mods, "make ci-deps installs them with the machine's npm")
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		devicetest.MissingPeer(t, "node", "apt-get install nodejs")
	}
	return mods
}

// elnPeerReport is what testdata/eln-check.mjs prints.
type elnPeerReport struct {
	Root       string   `json:"root"`
	Errors     []string `json:"errors"`
	Validator  []string `json:"validator"`
	ConformsTo []string `json:"conformsTo"`
	Files      []struct {
		ID   string `json:"id"`
		Size int    `json:"size"`
		Type string `json:"type"`
	} `json:"files"`
	Spectra []struct {
		ID          string    `json:"id"`
		X           []float64 `json:"x"`
		Y           []float64 `json:"y"`
		XUnits      string    `json:"xUnits"`
		YUnits      string    `json:"yUnits"`
		DataType    string    `json:"dataType"`
		Integration any       `json:"integration"`
	} `json:"spectra"`
	Action *struct {
		ID         string   `json:"id"`
		StartTime  string   `json:"startTime"`
		EndTime    string   `json:"endTime"`
		Status     string   `json:"status"`
		Instrument []string `json:"instrument"`
		Result     []string `json:"result"`
	} `json:"action"`
}

// checkELN judges an exported .eln: its zip layout (one root folder, the
// metadata at its top) by Go's reader and by unzip's listing; then, with
// programs nobody here wrote, the crate (npm ro-crate: every File it names
// present with its sha256 and size) and every spectrum (npm
// jcampconverter: the wavenumbers and counts the agent measured, as
// artifacts/raman_raw.json holds them).
func checkELN(t *testing.T, file, sid string) {
	t.Helper()
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	root := "hcp-edge-session-" + sid + "/"
	dir := t.TempDir()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !strings.HasPrefix(f.Name, root) {
			t.Fatalf("%s: %s outside the one root folder %s", file, f.Name, root)
		}
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(names) < 2 || names[1] != root+"ro-crate-metadata.json" {
		t.Fatalf("%s: layout %v", file, names)
	}
	if _, err := exec.LookPath("unzip"); err != nil || devicetest.PeersHidden() {
		devicetest.MissingPeer(t, "unzip", "apt-get install unzip")
	} else {
		out, err := exec.Command("unzip", "-l", file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), " "+root+"ro-crate-metadata.json\n") || !strings.Contains(string(out), root+"artifacts/raman_spectrum.jdx") {
			t.Fatalf("unzip -l %s: %v\n%s", file, err, out)
		}
		t.Logf("unzip -l %s:\n%s", filepath.Base(file), out)
	}
	mods := npmPeers(t)
	out, err := exec.Command("node", "testdata/eln-check.mjs", mods, filepath.Join(dir, root)).Output()
	if err != nil {
		var stderr string
		if xe, ok := err.(*exec.ExitError); ok {
			stderr = string(xe.Stderr)
		}
		t.Fatalf("eln-check.mjs: %v\n%s", err, stderr)
	}
	var rep elnPeerReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("eln-check.mjs: %v\n%.2000s", err, out)
	}
	if len(rep.Errors) > 0 || len(rep.Validator) > 0 || len(rep.Files) < 6 || rep.Action == nil {
		t.Fatalf("ro-crate: errors %v, validator errors %v, %d files, action %+v", rep.Errors, rep.Validator, len(rep.Files), rep.Action)
	}
	if !strings.Contains(strings.Join(rep.ConformsTo, " "), "https://w3id.org/ro/crate/1.2") || !strings.Contains(strings.Join(rep.ConformsTo, " "), "https://w3id.org/ro/wfrun/process/") ||
		rep.Action.Status != "http://schema.org/CompletedActionStatus" || rep.Action.StartTime == "" || rep.Action.EndTime == "" || len(rep.Action.Instrument) < 2 {
		t.Fatalf("ro-crate: conformsTo %v, action %+v", rep.ConformsTo, rep.Action)
	}
	// The furnace names its model (from its instrument profile).
	var meta struct {
		Graph []map[string]any `json:"@graph"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, root, "ro-crate-metadata.json")); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("metadata: %v", err)
	}
	for _, e := range meta.Graph {
		if e["@id"] == "#instrument-furnace" && e["model"] == nil {
			t.Fatalf("the furnace has no model: %v", e)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, root, "artifacts", "raman_raw.json"))
	if err != nil {
		t.Fatal(err)
	}
	var measured struct {
		Shift  []float64 `json:"raman_shift_cm1"`
		Counts []float64 `json:"intensity_counts"`
	}
	if err := json.Unmarshal(raw, &measured); err != nil {
		t.Fatal(err)
	}
	if len(rep.Spectra) != 1 {
		t.Fatalf("jcampconverter read %d spectra", len(rep.Spectra))
	}
	sp := rep.Spectra[0]
	if len(sp.X) != len(measured.Shift) || len(sp.Y) != len(measured.Counts) || len(sp.X) == 0 {
		t.Fatalf("jcampconverter: %d points, the agent measured %d", len(sp.X), len(measured.Shift))
	}
	for i := range sp.X {
		// The instrument reports shifts to 0.1 cm⁻¹ and whole counts: the
		// file declares both exactly (one decimal, YFACTOR 1).
		if math.Abs(sp.X[i]-measured.Shift[i]) > 0.05+1e-9 || math.Abs(sp.Y[i]-measured.Counts[i]) > 1e-9 {
			t.Fatalf("point %d: jcampconverter (%v, %v), measured (%v, %v)", i, sp.X[i], sp.Y[i], measured.Shift[i], measured.Counts[i])
		}
	}
	if !strings.EqualFold(sp.XUnits, "1/CM") || !strings.EqualFold(sp.YUnits, "COUNTS") {
		t.Fatalf("jcampconverter: units %q %q", sp.XUnits, sp.YUnits)
	}
	t.Logf("peers: ro-crate found %d files (sha256 and size as described), jcampconverter read %d points of %s (%s, %s)", len(rep.Files), len(sp.X), sp.ID, sp.XUnits, sp.YUnits)
}

// exportAndCheck exports session sid of e's daemon and judges the archive
// with checkELN (the shipped MoS2 and WS2 sessions, run through the broker).
func exportAndCheck(t *testing.T, e *env, sid string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "session.eln")
	e.mustCLI("export", sid, "--out", f)
	checkELN(t, f, sid)
}

// fetchELNAndCheck fetches session sid's .eln archive over HCP, as its
// caller (artifact_request of hcp://{sid}/artifacts/record.eln, in chunks
// of 4 KiB: every chunk from the same bytes, the sha256 verified by the
// client), and judges it with checkELN.
func fetchELNAndCheck(t *testing.T, c *caller.Client, sid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brokerLongGuard)
	defer cancel()
	var buf bytes.Buffer
	got, err := c.FetchArtifactWith(ctx, "hcp://"+sid+"/artifacts/record.eln", &buf, caller.FetchOpts{ChunkSize: 4096})
	if err != nil || got.Chunks < 2 {
		t.Fatalf("fetch record.eln: %+v %v", got, err)
	}
	f := filepath.Join(t.TempDir(), "fetched.eln")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("fetched record.eln over HCP: %d bytes in %d chunks, %s", got.SizeBytes, got.Chunks, got.Checksum)
	checkELN(t, f, sid)
}

// TestExportThroughCLI: the seed's MoS2 session (T2, approved by olga)
// exported through the running daemon is an .eln the peers read; the
// export is recorded as an access; an existing --out, an unknown session
// and a damaged artifact are refused with nothing left at --out; with
// the daemon stopped the export reads the state file.
func TestExportThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	e.arm()
	r := e.mustCLI("submit", seedTask)
	var sr submitResult
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || sr.ApprovalID == "" {
		t.Fatalf("submit: %v %+v\n%s", err, sr, r.stdout)
	}
	out := t.TempDir()
	// Pending: not ended, refused.
	if r := e.cli("export", sr.SessionID, "--out", filepath.Join(out, "pending.eln")); r.code != exitFailure || !strings.Contains(r.stderr, "has not ended") {
		t.Fatalf("export of a pending session: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.mustCLI("approve", sr.ApprovalID, "--operator", "olga")
	e.waitSessionFor(2*time.Minute, "completed", func(s sessionView) bool { return s.ID == sr.SessionID && s.State == "COMPLETED" })

	f := filepath.Join(out, "mos2.eln")
	t0 := time.Now()
	r = e.mustCLI("export", sr.SessionID, "--out", f, "--operator", "ada")
	t.Logf("export through the daemon: %v: %s", time.Since(t0).Round(time.Millisecond), strings.TrimSpace(r.stdout))
	checkELN(t, f, sr.SessionID)
	// The export is an access to the T2 session's data, recorded with its reader.
	log := e.mustCLI("audit", "log", "--session", sr.SessionID, "--kind", "data_access", "--json")
	if !strings.Contains(log.stdout, `"access":"export"`) || !strings.Contains(log.stdout, `"operator":"ada"`) {
		t.Fatalf("no export access in\n%s", log.stdout)
	}
	// An existing --out is refused and left as it was.
	if r := e.cli("export", sr.SessionID, "--out", f); r.code != exitFailure || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("export over an existing file: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.cli("export", "no-such-session", "--out", filepath.Join(out, "x.eln")); r.code != exitFailure {
		t.Fatalf("export of an unknown session: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.cli("export", sr.SessionID, "--out", "/proc/nope/x.eln"); r.code != exitFailure || !strings.Contains(r.stderr, "not writable") {
		t.Fatalf("export to an unwritable place: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.cli("export"); r.code != exitUsage {
		t.Fatalf("export without a session: exit %d", r.code)
	}
	// A damaged artifact: named, the export fails, nothing at --out.
	jdx := filepath.Join(e.dir, "artifacts", sr.SessionID, "raman_spectrum.jdx")
	orig, err := os.ReadFile(jdx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jdx, bytes.Replace(orig, []byte("##NPOINTS="), []byte("##NPOINTZ="), 1), 0o640); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(out, "damaged.eln")
	if r := e.cli("export", sr.SessionID, "--out", bad); r.code != exitFailure || !strings.Contains(r.stderr, "raman_spectrum_jcamp") || !strings.Contains(r.stderr, "damaged") {
		t.Fatalf("export with a damaged artifact: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(jdx, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Fatalf("left in the output directory: %v", entries)
	}
	// The daemon stopped: from the state file, recorded there.
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(out, "offline.eln")
	r = e.mustCLI("export", sr.SessionID, "--out", off, "--state-dir", e.dir, "--operator", "bob")
	if !strings.Contains(r.stdout, "state file") {
		t.Fatalf("offline export: %s", r.stdout)
	}
	checkELN(t, off, sr.SessionID)
	log = e.mustCLI("audit", "log", "--state-dir", e.dir, "--session", sr.SessionID, "--kind", "data_access", "--json")
	if !strings.Contains(log.stdout, `"operator":"bob"`) {
		t.Fatalf("no offline export access in\n%s", log.stdout)
	}
}

// BenchmarkExportMoS2: `hcp-edge export` of a completed MoS2 session (the
// seed task: its recipe's two hours of process time on the simulator),
// the whole command through the running daemon, process start included.
// The bound is 1 s.
//
//	go test -run XXX -bench ExportMoS2 -benchtime 10x ./cmd/hcp-edge/
func BenchmarkExportMoS2(b *testing.B) {
	e := newEnv(b, nil)
	e.start()
	e.arm()
	r := e.mustCLI("submit", seedTask)
	var sr submitResult
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || sr.ApprovalID == "" {
		b.Fatalf("submit: %v %+v\n%s", err, sr, r.stdout)
	}
	e.mustCLI("approve", sr.ApprovalID, "--operator", "olga")
	e.waitSessionFor(2*time.Minute, "completed", func(s sessionView) bool { return s.ID == sr.SessionID && s.State == "COMPLETED" })
	if fin, err := os.ReadFile(filepath.Join(e.dir, "results", sr.SessionID+".json")); err == nil {
		var m struct {
			Payload struct {
				Summary struct {
					Duration string `json:"duration"`
				} `json:"execution_summary"`
				Outputs struct {
					Log []any `json:"growth_log"`
				} `json:"outputs"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(fin, &m)
		b.Logf("session %s: execution_summary.duration %s, %d growth-log rows", sr.SessionID, m.Payload.Summary.Duration, len(m.Payload.Outputs.Log))
	}
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		e.mustCLI("export", sr.SessionID, "--out", filepath.Join(dir, strconv.Itoa(i)+".eln"))
	}
}

// checkT4Export: a T4 session's export is refused without an open release
// (nothing at --out) and, released, holds the plaintext of its sealed
// artifacts; the export is audited as an access.
func checkT4Export(t *testing.T, e *env, sid string, released bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "t4.eln")
	r := e.cli("export", sid, "--out", f, "--operator", "olga")
	if !released {
		if r.code != exitFailure || !strings.Contains(r.stderr, "access") {
			t.Fatalf("export of a T4 session without a release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(f); err == nil {
			t.Fatal("a refused export left a file")
		}
		return
	}
	if r.code != exitOK {
		t.Fatalf("export of a released T4 session: exit %d\n%s", r.code, r.stderr)
	}
	zr, err := zip.OpenReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var plot bool
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/artifacts/leak_check.svg") {
			rc, _ := zf.Open()
			b, _ := io.ReadAll(rc)
			_ = rc.Close()
			plot = bytes.Contains(b, []byte("<svg"))
		}
	}
	if !plot {
		t.Fatal("the released T4 export lacks the plaintext plot")
	}
	if rep := e.mustCLI("audit", "replay", sid, "--json", "--operator", "olga").stdout; !strings.Contains(rep, `"access": "export"`) {
		t.Fatalf("the T4 export is not in the audit:\n%.3000s", rep)
	}
}
