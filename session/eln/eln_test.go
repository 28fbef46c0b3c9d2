package eln

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func sampleRun() Run {
	uid := uint32(1001)
	return Run{SessionID: "s1", Title: "MoS2", Capability: "cvd-material-synthesis", Version: "1.0.0", State: "COMPLETED",
		Start: time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC),
		Agent: "hcp-edge", AgentVer: "test", Recipe: &Recipe{Name: "mos2", Version: "1.0.0", SHA256: "ab", File: "recipe/mos2.yaml"},
		Inputs:      map[string]any{"substrate": "SiO2/Si", "temperature_range": map[string]any{"min": 700}},
		Instruments: []Instrument{{ID: "raman", Kind: "spectrometer", Serial: "SN1"}},
		Operators:   []Person{{Name: "Anna A", OSUser: "anna", UID: &uid, Role: "approved for execution"}},
		Files: []File{{Path: "recipe/mos2.yaml", Name: "recipe", Type: "application/yaml", Data: []byte("name: mos2\n"), Role: "input"},
			{Path: "artifacts/raman_spectrum.jdx", Name: "raman_spectrum_jcamp", Type: "chemical/x-jcamp-dx", Data: []byte("##TITLE=x\r\n"), Role: "result"},
			{Path: "audit/audit.jsonl", Name: "audit", Type: "application/jsonl", Data: []byte("{}\n")}},
		Intent: "Synthesize monolayer MoS2", Context: TaskContext{Purpose: "Verify growth parameters",
			References: []string{"doi:10.1021/nl903868w", "https://example.org/paper", "lab notebook 7"}, Notes: "boat 2"}}
}

// TestLayout: one root folder, the metadata at its top, every file it
// names present with its size and sha256; the action's links resolve.
func TestLayout(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sampleRun()); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, Root("s1")+"/") {
			t.Fatalf("%s outside the root folder", f.Name)
		}
		rc, _ := f.Open()
		data, _ := io.ReadAll(rc)
		files[strings.TrimPrefix(f.Name, Root("s1")+"/")] = data
	}
	var meta struct {
		Context string           `json:"@context"`
		Graph   []map[string]any `json:"@graph"`
	}
	if err := json.Unmarshal(files[MetadataFile], &meta); err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, e := range meta.Graph {
		byID[e["@id"].(string)] = e
	}
	if meta.Context != contextROCrate || byID["./"] == nil || byID[MetadataFile] == nil {
		t.Fatalf("metadata %s", files[MetadataFile])
	}
	n := 0
	for id, e := range byID {
		if ty, _ := e["@type"].(string); ty != "File" && !strings.Contains(strings.Join(types(e), ","), "File") {
			continue
		}
		n++
		data, ok := files[id]
		sum := sha256.Sum256(data)
		if !ok || e["contentSize"] != strconv.Itoa(len(data)) || e["sha256"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: %v, in the zip %v (%d bytes)", id, e, ok, len(data))
		}
	}
	if n != 3 {
		t.Fatalf("%d files described", n)
	}
	run := byID["#run-s1"]
	if run == nil || run["@type"] != "CreateAction" || run["startTime"] != "2026-11-29T01:00:00Z" ||
		run["actionStatus"].(map[string]any)["@id"] != "http://schema.org/CompletedActionStatus" {
		t.Fatalf("action %v", run)
	}
	for _, k := range []string{"instrument", "object", "result", "participant", "agent"} {
		for _, r := range refs(run[k]) {
			if byID[r] == nil {
				t.Fatalf("%s names %s, not in the graph", k, r)
			}
		}
	}
	if byID["recipe/mos2.yaml"]["softwareVersion"] != "1.0.0" || byID["#instrument-raman"]["serialNumber"] != "SN1" {
		t.Fatalf("recipe %v instrument %v", byID["recipe/mos2.yaml"], byID["#instrument-raman"])
	}
	// The caller's intent and context (L4): kept, the references cited.
	root := byID["./"]
	if run["disambiguatingDescription"] != "Synthesize monolayer MoS2" || root["abstract"] != "Purpose: Verify growth parameters\nNotes: boat 2" {
		t.Fatalf("intent %v, abstract %v", run["disambiguatingDescription"], root["abstract"])
	}
	cites := refs(root["citation"])
	if !slices.Equal(cites, []string{"https://doi.org/10.1021/nl903868w", "https://example.org/paper", "#reference-3"}) {
		t.Fatalf("citation %v", cites)
	}
	for i, id := range cites {
		if e := byID[id]; e == nil || e["name"] != sampleRun().Context.References[i] {
			t.Fatalf("%s: %v", id, e)
		}
	}
}

func types(e map[string]any) []string {
	switch v := e["@type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

func refs(v any) []string {
	switch v := v.(type) {
	case map[string]any:
		return []string{v["@id"].(string)}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, refs(x)...)
		}
		return out
	}
	return nil
}

func TestRefused(t *testing.T) {
	for _, p := range []string{"../x", "/abs", "a/../../b", MetadataFile, "artifacts/raman_spectrum.jdx"} {
		r := sampleRun()
		r.Files = append(r.Files, File{Path: p, Data: []byte("x")})
		if err := Write(io.Discard, r); !errors.Is(err, ErrRun) {
			t.Fatalf("%q: %v", p, err)
		}
	}
	if err := Write(io.Discard, Run{}); !errors.Is(err, ErrRun) {
		t.Fatal("no session id accepted")
	}
}
