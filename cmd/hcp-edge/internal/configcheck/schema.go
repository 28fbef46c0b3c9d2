package configcheck

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"

	"hcp-edge/configs"
)

// SchemaURL identifies configs/hcp-edge.schema.json (its $id).
const SchemaURL = "https://hcp-edge.invalid/configs/hcp-edge.schema.json"

// Schema is the compiled configuration schema and its raw document, from
// which messages quote titles and the keys known at a place.
type Schema struct {
	compiled *jsonschema.Schema
	raw      any
}

// embedded is the embedded schema, compiled on first use.
var embedded = sync.OnceValues(func() (*Schema, error) { return CompileSchema(configs.Schema()) })

// LoadSchema returns the embedded configs/hcp-edge.schema.json, compiled
// (once per process).
func LoadSchema() (*Schema, error) { return embedded() }

// CompileSchema compiles a configuration schema (draft 2020-12) given as
// JSON text.
func CompileSchema(text []byte) (*Schema, error) {
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("configcheck: schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaURL, raw); err != nil {
		return nil, fmt.Errorf("configcheck: schema: %w", err)
	}
	s, err := c.Compile(SchemaURL)
	if err != nil {
		return nil, fmt.Errorf("configcheck: schema: %w", err)
	}
	return &Schema{compiled: s, raw: raw}, nil
}

// printer renders the validator's messages that are not rephrased here.
var printer = jsonschema.NewPrinter()

// finding is one leaf of the validator's error tree, placed.
type finding struct {
	Problem
	// prune is the entry to make null (or, with remove, to delete from its
	// mapping) so that the rest of the check does not trip on it again;
	// nil for a missing key.
	prune  *entry
	remove bool
	// missing: a required key is absent (Key names it).
	missing bool
}

// validate checks t against the schema and returns a finding for every leaf
// of the error tree.
func (s *Schema) validate(file string, t *tree) []finding {
	err := s.compiled.Validate(t.value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []finding{{Problem: Problem{File: file, Message: err.Error()}}}
	}
	var out []finding
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, s.place(file, t, e)...)
	}
	walk(ve)
	return out
}

// refusedKeys are keys the configuration must never hold, with the reason
// the check gives instead of "unknown key" (their value is never echoed).
var refusedKeys = map[string]string{
	"api_key": "an API key is never written in the configuration: put it in a file readable by its owner only (api_key_file) or in the environment (api_key_env)",
}

// place turns one leaf error into findings at their YAML nodes.
func (s *Schema) place(file string, t *tree, e *jsonschema.ValidationError) []finding {
	loc := pointer(e.InstanceLocation)
	at, ok := t.entries[loc]
	if !ok {
		at = t.entries[""]
	}
	f := func(en entry, key, msg string) finding {
		return finding{Problem: Problem{File: file, Line: en.at.Line, Column: en.at.Column, Key: key, Message: msg}}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		known := s.knownKeys(e.SchemaURL)
		var out []finding
		for _, p := range k.Properties {
			en, ok := t.entries[pointer(append(slices.Clip(e.InstanceLocation), p))]
			if !ok {
				en = at
			}
			msg := "unknown key (known here: " + strings.Join(known, ", ") + ")"
			if why, ok := refusedKeys[p]; ok {
				msg = why
			}
			fd := f(en, join(at.key, p), msg)
			fd.prune, fd.remove = &en, en.parent != nil
			out = append(out, fd)
		}
		return out
	case *kind.Required:
		var out []finding
		for _, p := range k.Missing {
			msg := "missing"
			if at.key == "" {
				msg = "missing section"
			}
			fd := f(at, join(at.key, p), msg)
			fd.missing = true
			out = append(out, fd)
		}
		return out
	}
	fd := f(at, at.key, s.message(e))
	fd.prune = &at
	return []finding{fd}
}

// message phrases a leaf error for a reader of YAML.
func (s *Schema) message(e *jsonschema.ValidationError) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		var want []string
		for _, w := range k.Want {
			want = append(want, typeName(w))
		}
		return fmt.Sprintf("want %s, got %s", strings.Join(want, " or "), typeName(k.Got))
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			if w != "" {
				want = append(want, fmt.Sprint(w))
			}
		}
		return fmt.Sprintf("%s is not one of: %s", quote(k.Got), strings.Join(want, ", "))
	case *kind.Const:
		return fmt.Sprintf("%s: must be %s", quote(k.Got), quote(k.Want))
	case *kind.Pattern:
		if title, ok := s.node(e.SchemaURL)["title"].(string); ok {
			return fmt.Sprintf("%q: want %s", k.Got, title)
		}
		return fmt.Sprintf("%q does not match %s", k.Got, k.Want)
	case *kind.Minimum:
		return fmt.Sprintf("%s is below the minimum %s", k.Got.RatString(), k.Want.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s is above the maximum %s", k.Got.RatString(), k.Want.RatString())
	case *kind.MinLength:
		if k.Got == 0 {
			return "empty"
		}
	case *kind.FalseSchema:
		return "not allowed here"
	}
	return e.ErrorKind.LocalizedString(printer)
}

// node returns the raw schema object at a schema URL (its fragment a JSON
// pointer), or nil.
func (s *Schema) node(url string) map[string]any {
	_, frag, _ := strings.Cut(url, "#")
	var v = s.raw
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	m, _ := v.(map[string]any)
	return m
}

// knownKeys lists the properties of the schema object at url, sorted.
func (s *Schema) knownKeys(url string) []string {
	props, _ := s.node(url)["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeName names a JSON type as a YAML reader knows it.
func typeName(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	case "null":
		return "null"
	}
	return t
}

// quote writes a JSON value as a reader of the YAML would recognise it.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// prune edits the document so that what the schema refused decodes as
// absent: unknown and repeated keys are removed, bad values become null.
func prune(findings []finding, dups []entry) {
	type pair struct{ parent, key *yaml.Node }
	remove := map[pair]bool{}
	for _, d := range dups {
		remove[pair{d.parent, d.keyNode}] = true
	}
	for _, f := range findings {
		switch {
		case f.prune == nil:
		case f.remove:
			remove[pair{f.prune.parent, f.prune.keyNode}] = true
		default:
			v := f.prune.value
			*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Anchor: v.Anchor, Line: v.Line, Column: v.Column}
		}
	}
	for p := range remove {
		for i := 0; i+1 < len(p.parent.Content); i += 2 {
			if p.parent.Content[i] == p.key {
				p.parent.Content = slices.Delete(p.parent.Content, i, i+2)
				break
			}
		}
	}
}
