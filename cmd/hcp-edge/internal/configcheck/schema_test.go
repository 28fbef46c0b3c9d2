package configcheck

import (
	"encoding"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/session/gate"
)

// schemaOnly validates text against the schema alone.
func schemaOnly(t *testing.T, name string, text []byte) []Problem {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, err := LoadSchema()
	if err != nil {
		t.Fatal(err)
	}
	tr := convert(name, doc.Content[0])
	out := tr.problems
	for _, f := range s.validate(name, tr) {
		out = append(out, f.Problem)
	}
	return out
}

// TestShippedConfigsMatchSchema: every YAML configuration in configs/ and
// the embedded default validate against the schema.
func TestShippedConfigsMatchSchema(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(configsDir, "*.yaml"))
	if len(paths) < 2 {
		t.Fatalf("only %v in %s", paths, configsDir)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if ps := schemaOnly(t, p, data); len(ps) > 0 {
			t.Errorf("%s: %v", p, ps)
		}
	}
	if ps := schemaOnly(t, EmbeddedName, configs.SimYAML); len(ps) > 0 {
		t.Errorf("embedded: %v", ps)
	}
}

// TestEmbeddedSchemaIsTheFile: the binary carries configs/hcp-edge.schema.json
// as it is in the tree, and it is a valid draft 2020-12 schema.
func TestEmbeddedSchemaIsTheFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(configsDir, "hcp-edge.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(configs.Schema()) {
		t.Error("configs.Schema() differs from configs/hcp-edge.schema.json")
	}
	if _, err := CompileSchema(data); err != nil {
		t.Fatal(err)
	}
}

// goKey is one key path of the Go configuration types with the JSON type
// its YAML value must have ("" for a mapping or list, described by its
// children).
type goKey struct{ path, typ string }

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
	// mixedTypes are the Go types whose YAML value takes one of several
	// JSON types, as the schema's list of types names them (sorted,
	// "|"-joined).
	mixedTypes = map[reflect.Type]string{
		reflect.TypeFor[gate.Quota](): "integer|string", // a count or "*"
	}
)

// goKeys lists every key path the Go types of t can hold, in the schema's
// form: a map's keys are "*", a list's items "[]".
func goKeys(t reflect.Type) []goKey {
	var out []goKey
	var walk func(t reflect.Type, path string, depth int)
	walk = func(t reflect.Type, path string, depth int) {
		if depth > 16 {
			return
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		leaf := ""
		switch {
		case mixedTypes[t] != "":
			leaf = mixedTypes[t]
		case t == durationType || reflect.PointerTo(t).Implements(textUnmarshaler):
			leaf = "string"
		case t.Kind() == reflect.String:
			leaf = "string"
		case t.Kind() == reflect.Bool:
			leaf = "boolean"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			leaf = "integer"
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			leaf = "number"
		}
		if leaf != "" {
			out = append(out, goKey{path, leaf})
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if !f.IsExported() || name == "-" {
					continue
				}
				if strings.Contains(","+opts+",", ",inline,") {
					walk(f.Type, path, depth+1)
					continue
				}
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				walk(f.Type, join(path, name), depth+1)
			}
		case reflect.Map:
			walk(t.Elem(), join(path, "*"), depth+1)
		case reflect.Slice, reflect.Array:
			walk(t.Elem(), path+"[]", depth+1)
		}
	}
	walk(t, "", 0)
	return out
}

// schemaKeys lists every key path the schema describes, with the JSON type
// it gives the value there ("enum" when it lists the values).
func schemaKeys(t *testing.T) []goKey {
	var raw map[string]any
	if err := json.Unmarshal(configs.Schema(), &raw); err != nil {
		t.Fatal(err)
	}
	defs := raw["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s
			}
			merged := map[string]any{}
			for k, v := range defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any) {
				merged[k] = v
			}
			for k, v := range s {
				if k != "$ref" {
					merged[k] = v
				}
			}
			if _, ok := merged["$ref"]; !ok || merged["$ref"] == ref {
				delete(merged, "$ref")
			}
			s = merged
		}
	}
	var out []goKey
	var walk func(s map[string]any, path string)
	walk = func(s map[string]any, path string) {
		s = resolve(s)
		if props, ok := s["properties"].(map[string]any); ok {
			for k, v := range props {
				walk(v.(map[string]any), join(path, k))
			}
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				walk(ap, join(path, "*"))
			}
			return
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			walk(ap, join(path, "*"))
			return
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(items, path+"[]")
			return
		}
		typ, _ := s["type"].(string)
		if s["enum"] != nil || s["const"] != nil {
			typ = "enum" // the values are listed
		}
		if types, ok := s["type"].([]any); ok {
			var ts []string
			for _, t := range types {
				ts = append(ts, t.(string))
			}
			slices.Sort(ts)
			typ = strings.Join(ts, "|")
		}
		out = append(out, goKey{path, typ})
	}
	walk(raw, "")
	return out
}

// TestSchemaMatchesGoTypes: the schema describes exactly the keys the Go
// configuration types (rigconfig.File and what it embeds: envelope.Config,
// gate.Config, …) decode, each with a JSON type the Go type accepts, so
// that the two cannot drift apart.
func TestSchemaMatchesGoTypes(t *testing.T) {
	goSide := map[string]string{}
	for _, k := range goKeys(reflect.TypeFor[rigconfig.File]()) {
		goSide[k.path] = k.typ
	}
	// A Go map whose keys the schema names one by one (e.g. the trips of
	// envelope.emergency_procedures) counts as the map's "*".
	var mapPrefixes []string
	for p := range goSide {
		if i := strings.Index(p, ".*"); i > 0 {
			mapPrefixes = append(mapPrefixes, p[:i+1])
		}
	}
	schemaSide := map[string]string{}
	for _, k := range schemaKeys(t) {
		p := k.path
		for _, m := range mapPrefixes {
			if rest, ok := strings.CutPrefix(p, m); ok && !strings.HasPrefix(rest, "*") && !strings.Contains(rest, ".") {
				p = m + "*"
			}
		}
		if prev, dup := schemaSide[p]; dup && prev != k.typ {
			t.Errorf("%s: the schema gives its keys types %s and %s", p, prev, k.typ)
		}
		schemaSide[p] = k.typ
	}
	if len(goSide) < 100 {
		t.Fatalf("only %d Go keys: did the walk stop?", len(goSide))
	}
	for _, p := range slices.Sorted(mapsKeys(goSide)) {
		st, ok := schemaSide[p]
		switch {
		case !ok:
			t.Errorf("%s (%s) is in the Go types but not in the schema", p, goSide[p])
		case st == "enum":
			if goSide[p] != "string" && goSide[p] != "boolean" {
				t.Errorf("%s: the schema lists values, the Go type is %s", p, goSide[p])
			}
		case st != goSide[p]:
			t.Errorf("%s: the schema says %q, the Go type is %s", p, st, goSide[p])
		}
	}
	for _, p := range slices.Sorted(mapsKeys(schemaSide)) {
		if _, ok := goSide[p]; !ok {
			t.Errorf("%s is in the schema but not in the Go types", p)
		}
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestExampleCoversEveryKey: configs/hcp-edge.example.yaml and
// configs/hcp-edge.example-lists.yaml (the rig section's list shape, which
// cannot share a file with the one-entry shape) each pass the check, and
// together they set every key the schema (and so the Go types) knows.
func TestExampleCoversEveryKey(t *testing.T) {
	cleanEnv(t)
	have := map[string]bool{}
	keys := schemaKeys(t)
	maps := map[string]bool{}
	for _, k := range keys {
		for i, r := range k.path {
			if r == '*' {
				maps[strings.TrimSuffix(k.path[:i], ".")] = true
			}
		}
	}
	for _, name := range []string{"hcp-edge.example.yaml", "hcp-edge.example-lists.yaml"} {
		path := filepath.Join(configsDir, name)
		if r := Check(path, filepath.Join(configsDir, "capabilities")); !r.Valid {
			t.Fatalf("the example %s does not pass the check:\n%s", name, report(r))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(n *yaml.Node, path string, mapAt func(string) bool)
		walk = func(n *yaml.Node, path string, isMap func(string) bool) {
			switch n.Kind {
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					k := n.Content[i].Value
					if isMap(path) {
						k = "*"
					}
					walk(n.Content[i+1], join(path, k), isMap)
				}
			case yaml.SequenceNode:
				for _, v := range n.Content {
					walk(v, path+"[]", isMap)
				}
			default:
				have[path] = true
			}
		}
		walk(doc.Content[0], "", func(p string) bool { return maps[p] })
	}
	for _, k := range keys {
		if !have[k.path] {
			t.Errorf("the examples do not document %s", k.path)
		}
	}
}

// TestTwoZoneRigValid: config check accepts the third rig
// (configs/mos2-two-zone.yaml, two heated zones in the list shape): no
// problem at all, its zones driven (issue 42).
func TestTwoZoneRigValid(t *testing.T) {
	cleanEnv(t)
	path := filepath.Join(configsDir, "mos2-two-zone.yaml")
	if r := Check(path, filepath.Join(configsDir, "capabilities")); len(r.Problems) != 0 {
		t.Errorf("%s:\n%s", path, report(r))
	}
}
