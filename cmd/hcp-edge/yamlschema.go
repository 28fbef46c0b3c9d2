package main

import (
	"encoding"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file checks a YAML document against the Go types it decodes into,
// node by node, so that every problem is reported with its key path and
// line (a plain yaml Decode stops at the first error of a TextUnmarshaler
// and names neither the key nor, then, the line), and maps key paths such as
// "rig.mfcs[2].full_scale" or "envelope.parameters.flow.H2.max" back to the
// line that holds them.

// problem is one finding of config check.
type problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 0: the file as a whole
	Column  int    `json:"column,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

func (p problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// yamlField is one key of a struct as the yaml package sees it.
type yamlField struct {
	name  string
	index []int
	typ   reflect.Type
}

// yamlFields lists the keys of struct type t, flattening ",inline" fields.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") && sf.Type.Kind() == reflect.Struct {
			for _, f := range yamlFields(sf.Type) {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, yamlField{name: name, index: []int{i}, typ: sf.Type})
	}
	return out
}

// isLeaf reports whether values of t are decoded as a whole: scalars and
// types with their own YAML or text unmarshaler.
func isLeaf(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	if t.Implements(yamlUnmarshaler) || pt.Implements(yamlUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Pointer:
		return false
	}
	return true
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): `)

// schemaCheck walks n (a document's content) against type t and returns a
// problem for every unknown key, wrong node kind and value that does not
// decode, with its path and line. It prunes n as it goes: unknown keys are
// removed and bad values become null, so that what remains decodes and can
// be checked further.
func schemaCheck(file string, n *yaml.Node, t reflect.Type) []problem {
	var out []problem
	var walk func(n *yaml.Node, t reflect.Type, path string)
	bad := func(n *yaml.Node, path, format string, a ...any) {
		out = append(out, problem{File: file, Line: n.Line, Column: n.Column, Key: path, Message: fmt.Sprintf(format, a...)})
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
	}
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return // absent: the zero value
		}
		for t.Kind() == reflect.Pointer && !isLeaf(t) {
			t = t.Elem()
		}
		if isLeaf(t) {
			if err := n.Decode(reflect.New(t).Interface()); err != nil {
				msg := err.Error()
				if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
					msg = strings.Join(te.Errors, "; ")
				}
				bad(n, path, "%s", strings.TrimSpace(lineRE.ReplaceAllString(msg, "")))
			}
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			if n.Kind != yaml.MappingNode {
				bad(n, path, "want a mapping of keys, got %s", kindName(n))
				return
			}
			fields := map[string]yamlField{}
			var names []string
			for _, f := range yamlFields(t) {
				fields[f.name] = f
				names = append(names, f.name)
			}
			kept := n.Content[:0]
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if first, dup := seen[k.Value]; dup {
					out = append(out, problem{File: file, Line: k.Line, Column: k.Column, Key: join(path, k.Value),
						Message: fmt.Sprintf("defined twice (first at line %d)", first)})
					continue
				}
				seen[k.Value] = k.Line
				if k.Value == "<<" { // merge key: check what it merges
					walk(v, t, path)
					kept = append(kept, k, v)
					continue
				}
				f, ok := fields[k.Value]
				if !ok {
					out = append(out, problem{File: file, Line: k.Line, Column: k.Column, Key: join(path, k.Value),
						Message: "unknown key (known here: " + strings.Join(names, ", ") + ")"})
					continue
				}
				walk(v, f.typ, join(path, k.Value))
				kept = append(kept, k, v)
			}
			n.Content = kept
		case reflect.Map:
			if n.Kind != yaml.MappingNode {
				bad(n, path, "want a mapping, got %s", kindName(n))
				return
			}
			kept := n.Content[:0]
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if first, dup := seen[k.Value]; dup {
					out = append(out, problem{File: file, Line: k.Line, Column: k.Column, Key: join(path, k.Value),
						Message: fmt.Sprintf("defined twice (first at line %d)", first)})
					continue
				}
				seen[k.Value] = k.Line
				kept = append(kept, k, v)
				if err := k.Decode(reflect.New(t.Key()).Interface()); err != nil {
					out = append(out, problem{File: file, Line: k.Line, Column: k.Column, Key: join(path, k.Value), Message: "bad key: " + err.Error()})
					*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
					continue
				}
				walk(v, t.Elem(), join(path, k.Value))
			}
			n.Content = kept
		case reflect.Slice, reflect.Array:
			if n.Kind != yaml.SequenceNode {
				bad(n, path, "want a list, got %s", kindName(n))
				return
			}
			for i, v := range n.Content {
				walk(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			bad(n, path, "cannot hold a %s", t)
		}
	}
	walk(n, t, "")
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "something else"
}

// locate finds the node of a key path in root (a document's content): at a
// mapping it takes the longest key that prefixes the rest of the path, so
// that keys with dots in them ("furnace.setpoint") resolve; at a list it
// takes "[i]". It returns the line and column of the deepest node reached
// (a mapping entry's key) and whether the whole path resolved.
func locate(root *yaml.Node, path string) (line, col int, found bool) {
	n := root
	line, col = n.Line, n.Column
	rest := path
	for rest != "" {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if (rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[")) &&
					(best < 0 || len(k) > len(n.Content[best].Value)) {
					best = i
				}
			}
			if best < 0 {
				return line, col, false
			}
			k := n.Content[best]
			line, col = k.Line, k.Column
			rest = strings.TrimPrefix(rest[len(k.Value):], ".")
			n = n.Content[best+1]
		case yaml.SequenceNode:
			if !strings.HasPrefix(rest, "[") {
				return line, col, false
			}
			end := strings.IndexByte(rest, ']')
			i, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil || i < 0 || i >= len(n.Content) {
				return line, col, false
			}
			n = n.Content[i]
			line, col = n.Line, n.Column
			rest = strings.TrimPrefix(rest[end+1:], ".")
		default:
			return line, col, false
		}
	}
	return line, col, true
}

// typeKeys lists every key path that type t can hold: map keys appear as
// "*" and list items as "[]" (e.g. "rig.mfcs[].full_scale",
// "envelope.parameters.*.max"). Leaves only.
func typeKeys(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, path string, depth int)
	walk = func(t reflect.Type, path string, depth int) {
		for t.Kind() == reflect.Pointer && !isLeaf(t) {
			t = t.Elem()
		}
		if depth > 16 || isLeaf(t) {
			out = append(out, path)
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			for _, f := range yamlFields(t) {
				walk(f.typ, join(path, f.name), depth+1)
			}
		case reflect.Map:
			walk(t.Elem(), join(path, "*"), depth+1)
		case reflect.Slice, reflect.Array:
			walk(t.Elem(), path+"[]", depth+1)
		}
	}
	walk(t, "", 0)
	sort.Strings(out)
	return out
}

// nodeKeys lists the key paths present in n, in the form of typeKeys: keys
// of a map-typed field become "*". It follows t so that it knows which
// mappings are maps.
func nodeKeys(n *yaml.Node, t reflect.Type) map[string]bool {
	out := map[string]bool{}
	var walk func(n *yaml.Node, t reflect.Type, path string)
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		for t.Kind() == reflect.Pointer && !isLeaf(t) {
			t = t.Elem()
		}
		if isLeaf(t) {
			out[path] = true
			return
		}
		switch {
		case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
			fields := map[string]yamlField{}
			for _, f := range yamlFields(t) {
				fields[f.name] = f
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if f, ok := fields[n.Content[i].Value]; ok {
					walk(n.Content[i+1], f.typ, join(path, f.name))
				}
			}
		case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], t.Elem(), join(path, "*"))
			}
		case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
			for _, v := range n.Content {
				walk(v, t.Elem(), path+"[]")
			}
		}
	}
	walk(n, t, "")
	return out
}
