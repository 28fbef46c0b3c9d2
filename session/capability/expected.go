package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CheckExpectedOutput judges a caller's expected_output (L4) against c's
// declared output_schema before anything runs: the schema must compile
// (JSON Schema 2020-12 unless it says otherwise; no remote references),
// every required_fields entry and every property the schema requires must
// be one the output schema declares (at the top level, and inside a
// property both declare as an object), and a property both declare must
// not have types that exclude each other ("integer" is a "number"). The
// error is an *InputError whose paths point into the task_submit payload
// ("/expected_output/..."). It is a static check of what the capability can produce, not a proof: the
// outputs are validated against both schemas again when the run ends.
func (c *Capability) CheckExpectedOutput(requiredFields []string, schema json.RawMessage) error {
	var vs []Violation
	add := func(path, format string, args ...any) {
		vs = append(vs, Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	var declared map[string]any
	_ = json.Unmarshal(c.OutputSchema, &declared) // compiled by Parse: an object
	for i, f := range requiredFields {
		if _, ok := properties(declared)[f]; !ok {
			add(fmt.Sprintf("/expected_output/required_fields/%d", i),
				"%q is not an output of %s %s (its output_schema declares %s)", f, c.Name, c.SemVer, names(declared))
		}
	}
	if len(bytes.TrimSpace(schema)) > 0 && !bytes.Equal(bytes.TrimSpace(schema), []byte("null")) {
		if _, err := compile("https://hcp-edge.invalid/expected_output/schema.json", schema); err != nil {
			add("/expected_output/schema", "does not compile: %s", strings.Join(strings.Fields(err.Error()), " "))
		} else {
			var want any
			if err := json.Unmarshal(schema, &want); err == nil {
				compareSchemas(c, "/expected_output/schema", want, declared, add)
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return &InputError{Violations: vs}
}

// compareSchemas walks want (the caller's schema) beside have (the
// declared one), reporting types that exclude each other and required
// properties that have does not declare.
func compareSchemas(c *Capability, path string, want any, have map[string]any, add func(path, format string, args ...any)) {
	w, ok := want.(map[string]any)
	if !ok || have == nil {
		return // a boolean schema, or nothing declared to compare with
	}
	wt, ht := types(w), types(have)
	if len(wt) > 0 && len(ht) > 0 && !overlap(wt, ht) {
		add(path+"/type", "%s, where the output of %s %s is %s", strings.Join(wt, " or "), c.Name, c.SemVer, strings.Join(ht, " or "))
		return
	}
	hp := properties(have)
	if req, ok := w["required"].([]any); ok && (len(ht) == 0 || slices.Contains(ht, "object")) && !declaresAny(have) {
		for i, r := range req {
			name, _ := r.(string)
			if _, ok := hp[name]; !ok {
				add(fmt.Sprintf("%s/required/%d", path, i), "%q is never produced by %s %s (declared here: %s)",
					name, c.Name, c.SemVer, names(have))
			}
		}
	}
	wp, _ := w["properties"].(map[string]any)
	for _, name := range sortedKeys(wp) {
		if hs, ok := hp[name].(map[string]any); ok {
			compareSchemas(c, path+"/properties/"+escapePointer(name), wp[name], hs, add)
		}
	}
}

// declaresAny reports whether s admits properties by a schema rather than
// by name (additionalProperties given as a schema or true,
// patternProperties): every name is then one it declares.
func declaresAny(s map[string]any) bool {
	switch a := s["additionalProperties"].(type) {
	case bool:
		if a {
			return true
		}
	case map[string]any:
		return true
	}
	_, ok := s["patternProperties"]
	return ok
}

func properties(s map[string]any) map[string]any {
	p, _ := s["properties"].(map[string]any)
	return p
}

func names(s map[string]any) string {
	ks := sortedKeys(properties(s))
	if len(ks) == 0 {
		return "no properties"
	}
	return strings.Join(ks, ", ")
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// types returns a schema's "type" as a list (none: any type).
func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// overlap reports whether a value could have one of a's types and one of
// b's: an integer is a number.
func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y || x+y == "integernumber" || x+y == "numberinteger" {
				return true
			}
		}
	}
	return false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
