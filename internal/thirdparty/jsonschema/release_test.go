package jsonschema

// hcp-edge's own test of its patch (README.hcp-edge.md): ReleaseMetaSchemas
// drops the compiled meta-schemas, and what is compiled and validated after
// it is what was before.

import (
	"strings"
	"sync"
	"testing"
)

// compileReleaseSchema compiles a draft 2020-12 schema with a format and a
// $ref, as hcp-edge's declarations have.
func compileReleaseSchema(t *testing.T, raw string) (*Schema, error) {
	t.Helper()
	doc, err := UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler()
	c.DefaultDraft(Draft2020)
	c.AssertFormat()
	if err := c.AddResource("urn:test:s.json", doc); err != nil {
		t.Fatal(err)
	}
	return c.Compile("urn:test:s.json")
}

const releaseGood = `{"type": "object", "required": ["at"], "additionalProperties": false,
	"properties": {"at": {"type": "string", "format": "date-time"}, "n": {"$ref": "#/$defs/n"}},
	"$defs": {"n": {"type": "integer", "minimum": 1}}}`

// releaseBad is not a valid schema: the meta-schema refuses it.
const releaseBad = `{"type": "objekt"}`

func releaseVerdicts(t *testing.T) []string {
	t.Helper()
	s, err := compileReleaseSchema(t, releaseGood)
	if err != nil {
		t.Fatalf("good schema: %v", err)
	}
	var out []string
	for _, in := range []string{`{"at": "2026-12-07T05:00:00Z", "n": 2}`, `{"at": "yesterday"}`, `{"n": 0}`, `{"at": "2026-12-07T05:00:00Z", "x": 1}`} {
		doc, err := UnmarshalJSON(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(doc); err != nil {
			out = append(out, err.Error())
		} else {
			out = append(out, "ok")
		}
	}
	if _, err := compileReleaseSchema(t, releaseBad); err == nil {
		t.Fatal("a schema with an unknown type was compiled")
	} else {
		out = append(out, err.Error())
	}
	return out
}

func TestReleaseMetaSchemasSameResults(t *testing.T) {
	before := releaseVerdicts(t)
	if !drafts.compiled || Draft2020.sch == nil {
		t.Fatal("the meta-schemas were not compiled by a compile")
	}
	ReleaseMetaSchemas()
	if drafts.compiled || Draft2020.sch != nil || Draft2020.vocabSchemas != nil || Draft4.sch != nil {
		t.Fatal("ReleaseMetaSchemas left a compiled meta-schema")
	}
	after := releaseVerdicts(t)
	if !drafts.compiled || Draft2020.sch == nil {
		t.Fatal("the meta-schemas were not compiled again")
	}
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("results differ after a release:\nbefore: %q\nafter:  %q", before, after)
	}
	if before[0] != "ok" || before[1] == "ok" || before[2] == "ok" || before[3] == "ok" {
		t.Fatalf("verdicts: %q", before)
	}
}

// TestReleaseMetaSchemasConcurrent releases while other goroutines compile
// (go test -race): no compile sees a half-released draft.
func TestReleaseMetaSchemasConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if _, err := compileReleaseSchema(t, releaseGood); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		ReleaseMetaSchemas()
	}
	wg.Wait()
}
