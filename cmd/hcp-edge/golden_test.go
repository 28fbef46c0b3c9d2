package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"hcp-edge/transport/wire"
)

// updateGolden rewrites the golden files instead of comparing with them:
//
//	go test -count=1 -run 'TestShippedCapabilities/cvd' ./cmd/hcp-edge/ -update-golden
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/*.golden.json from this run")

// goldenMoS2 is the MoS2 session's message stream as its caller receives
// it, normalised (normaliseStream).
const goldenMoS2 = "testdata/mos2-stream.golden.json"

// goldenKept are the payload keys whose values are part of the protocol's
// story and so are kept: message and event types, states, stages, codes,
// names. Every other value is replaced by its JSON kind, so ids, times,
// measurements and free text do not make the stream differ.
var goldenKept = map[string]bool{
	"type": true, "event_type": true, "state": true, "from": true, "to": true, "from_state": true, "to_state": true,
	"stage": true, "step_name": true, "status": true, "code": true, "reason_code": true, "error_code": true,
	"risk_level": true, "data_classification": true, "capability": true, "capability_version": true,
	"hcp_version": true, "level": true, "name": true, "format": true, "unit": true, "recoverable": true,
	"resumable": true, "mime_type": true, "result_type": true, "is_partial": true,
}

// goldenDiagnostic are event types left out of the sequence: how many a run
// logs, and where, depends on the machine's speed (a retry under load is
// logged); their shapes are still pinned, per event type.
var goldenDiagnostic = map[string]bool{"log": true, "warning": true}

// goldenStream is the normalised stream: the sequence of messages (a run of
// identical normalised messages kept once, with repeated set, since how
// often a hold reports depends on timing) and the shape of every diagnostic
// event type that appeared.
type goldenStream struct {
	Messages    []goldenMessage `json:"messages"`
	Diagnostics map[string]any  `json:"diagnostics,omitempty"`
}

type goldenMessage struct {
	Message  any  `json:"message"`
	Repeated bool `json:"repeated,omitempty"`
}

// normaliseStream reduces a session's messages, as encoded on the wire, to
// their structure: every key name, the kept values (goldenKept), and the
// kind of every other value. Arrays keep one element per run of identical
// normalised elements.
func normaliseStream(t *testing.T, msgs []*wire.Envelope) goldenStream {
	t.Helper()
	var g goldenStream
	for _, m := range msgs {
		body, err := wire.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		n := normalise("", v)
		if et := eventType(v); goldenDiagnostic[et] {
			if g.Diagnostics == nil {
				g.Diagnostics = map[string]any{}
			}
			g.Diagnostics[et] = mergeShape(g.Diagnostics[et], n)
			continue
		}
		g.Messages = append(g.Messages, goldenMessage{Message: n})
		g.Messages = collapseCycle(g.Messages)
	}
	return g
}

// goldenCycle is the longest run of messages that collapseCycle folds: a
// hold reports progress and a checkpoint (and sometimes results) each
// period, and how many periods a run takes depends on the machine's speed.
const goldenCycle = 4

// collapseCycle folds the end of ms when its last k messages repeat the k
// before them (k ≤ goldenCycle): the repetition is dropped and the block
// kept once, marked repeated.
func collapseCycle(ms []goldenMessage) []goldenMessage {
	for k := 1; k <= goldenCycle && 2*k <= len(ms); k++ {
		same := true
		for i := 0; i < k && same; i++ {
			same = equalJSON(ms[len(ms)-k+i].Message, ms[len(ms)-2*k+i].Message)
		}
		if same {
			ms = ms[:len(ms)-k]
			for i := len(ms) - k; i < len(ms); i++ {
				ms[i].Repeated = true
			}
			return ms
		}
	}
	return ms
}

func eventType(v any) string {
	m, _ := v.(map[string]any)
	p, _ := m["payload"].(map[string]any)
	et, _ := p["event_type"].(string)
	return et
}

func normalise(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalise(k, e)
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			n := normalise(key, e)
			if len(out) > 0 && equalJSON(out[len(out)-1], n) {
				continue
			}
			out = append(out, n)
		}
		if out == nil {
			return []any{}
		}
		return out
	case string:
		if goldenKept[key] {
			return x
		}
		return "<string>"
	case float64:
		if goldenKept[key] {
			return x
		}
		return "<number>"
	case bool:
		if goldenKept[key] {
			return x
		}
		return "<bool>"
	case nil:
		return nil
	}
	return fmt.Sprintf("<%T>", v)
}

// mergeShape unites two normalised values' key sets (the shape of a
// diagnostic event type across all its occurrences).
func mergeShape(a, b any) any {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if a == nil {
			return b
		}
		if s, ok := b.(string); ok && strings.HasPrefix(s, "<") {
			return b
		}
		return a
	}
	out := map[string]any{}
	for k, v := range am {
		out[k] = v
	}
	for k, v := range bm {
		out[k] = mergeShape(out[k], v)
	}
	return out
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// checkGolden compares the normalised stream of msgs with the golden file,
// or rewrites it under -update-golden. On a difference it names the first
// message that differs and the diagnostics' event types.
func checkGolden(t *testing.T, path string, msgs []*wire.Envelope) {
	t.Helper()
	got := normaliseStream(t, msgs)
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON = append(gotJSON, '\n')
	if *updateGolden {
		if err := os.WriteFile(path, gotJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d messages)", path, len(got.Messages))
		return
	}
	wantJSON, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update-golden)", err)
	}
	if bytes.Equal(wantJSON, gotJSON) {
		return
	}
	var want goldenStream
	if err := json.Unmarshal(wantJSON, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := 0; i < max(len(want.Messages), len(got.Messages)); i++ {
		// Repeated is not compared: whether a period's report came once or
		// many times is the machine's speed, not the protocol.
		var w, g []byte
		if i < len(want.Messages) {
			w, _ = json.Marshal(want.Messages[i].Message)
		}
		if i < len(got.Messages) {
			g, _ = json.Marshal(got.Messages[i].Message)
		}
		if !bytes.Equal(w, g) {
			t.Fatalf("message stream differs from %s at normalised message %d:\nwant %s\ngot  %s\n(rerun with -update-golden if the change is intended, and review the diff)", path, i, w, g)
		}
	}
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if !slices.Equal(keys(want.Diagnostics), keys(got.Diagnostics)) {
		// A diagnostic type that appears in one run and not another (a
		// warning under load) is not a protocol change; its shape, where
		// both have it, must agree.
		t.Logf("diagnostic event types: golden %v, this run %v", keys(want.Diagnostics), keys(got.Diagnostics))
	}
	for k, w := range want.Diagnostics {
		if g, ok := got.Diagnostics[k]; ok && !equalJSON(mergeShape(w, g), w) {
			t.Fatalf("%s events have fields the golden file does not: golden %v, got %v", k, w, g)
		}
	}
}

// TestCollapseCycle: a run of one message, or of a cycle of up to
// goldenCycle messages, is kept once; anything else is kept as it came.
func TestCollapseCycle(t *testing.T) {
	fold := func(in string) string {
		var ms []goldenMessage
		for _, c := range in {
			ms = collapseCycle(append(ms, goldenMessage{Message: string(c)}))
		}
		var b strings.Builder
		for _, m := range ms {
			b.WriteString(m.Message.(string))
			if m.Repeated {
				b.WriteString("*")
			}
		}
		return b.String()
	}
	for in, want := range map[string]string{
		"abc":        "abc",
		"aaab":       "a*b",
		"pcpcpcx":    "p*c*x",
		"apcpcpcbb":  "ap*c*b*",
		"abcabcabcd": "a*b*c*d",
		"abab c":     "a*b* c",
	} {
		if got := fold(in); got != want {
			t.Errorf("%q folds to %q, want %q", in, got, want)
		}
	}
}
