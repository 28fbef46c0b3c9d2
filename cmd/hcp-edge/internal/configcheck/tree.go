package configcheck

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits of the conversion: aliases can make a small document expand into a
// huge value (a "billion laughs"); past these the conversion stops with a
// problem instead.
const (
	maxNodes = 20_000 // configs/hcp-edge.example.yaml, every key set, has about 500
	maxDepth = 32
)

// entry is where one value of the converted document came from.
type entry struct {
	key   string     // dotted key path, e.g. rig.mfcs[2].full_scale
	at    *yaml.Node // the node a problem points at: the mapping key, or the list item
	value *yaml.Node // the value node (an alias node as written)
	// parent and keyNode are set for mapping entries: the mapping node that
	// holds the entry (pruning removes keyNode and its value from it).
	parent, keyNode *yaml.Node
}

// tree is a YAML document converted to a JSON value, with the origin of
// every value by its instance location.
type tree struct {
	value    any
	entries  map[string]entry // by instance location, its tokens joined with "\x00"
	problems []Problem        // duplicate keys, limits
	// dups are the repeated entries of a mapping: pruning removes them.
	dups  []entry
	nodes int
	over  bool // past maxNodes or maxDepth: the conversion stopped
}

// pointer joins instance-location tokens into a map key.
func pointer(tokens []string) string { return strings.Join(tokens, "\x00") }

// convert turns root (a document's content) into a JSON value: mappings
// become objects (merge keys merged, a key with a null value left out, as
// it decodes to the zero value), sequences arrays, scalars by their
// resolved tag (numbers as json.Number, as jsonschema.UnmarshalJSON makes
// them).
func convert(file string, root *yaml.Node) *tree {
	t := &tree{entries: map[string]entry{}}
	t.entries[""] = entry{at: root, value: root}
	t.value = t.walk(file, root, nil, "", 0)
	return t
}

func (t *tree) walk(file string, n *yaml.Node, loc []string, key string, depth int) any {
	t.nodes++
	if !t.over && (t.nodes > maxNodes || depth > maxDepth) {
		t.over = true
		t.problems = append(t.problems, Problem{File: file, Line: n.Line, Column: n.Column, Key: key,
			Message: fmt.Sprintf("the document expands to more than %d nodes or %d levels (aliases?)", maxNodes, maxDepth)})
	}
	if t.over {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		obj := map[string]any{}
		t.mapping(file, n, obj, loc, key, depth)
		return obj
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			if t.over {
				break
			}
			iloc := append(loc[:len(loc):len(loc)], strconv.Itoa(i))
			ikey := fmt.Sprintf("%s[%d]", key, i)
			t.note(iloc, entry{key: ikey, at: item, value: item})
			arr = append(arr, t.walk(file, item, iloc, ikey, depth+1))
		}
		return arr
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil
}

// mapping adds the entries of mapping node n to obj, then what it merges.
func (t *tree) mapping(file string, n *yaml.Node, obj map[string]any, loc []string, key string, depth int) {
	var merges []*yaml.Node
	own := map[string]int{} // the line of each key the mapping sets itself
	for i := 0; i+1 < len(n.Content) && !t.over; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		ekey := join(key, k.Value)
		if first, dup := own[k.Value]; dup {
			t.problems = append(t.problems, Problem{File: file, Line: k.Line, Column: k.Column, Key: ekey,
				Message: fmt.Sprintf("defined twice (first at line %d)", first)})
			t.dups = append(t.dups, entry{key: ekey, at: k, value: v, parent: n, keyNode: k})
			continue
		}
		own[k.Value] = k.Line
		if isNull(v) {
			continue // absent: the zero value
		}
		eloc := append(loc[:len(loc):len(loc)], k.Value)
		t.note(eloc, entry{key: ekey, at: k, value: v, parent: n, keyNode: k})
		obj[k.Value] = t.walk(file, v, eloc, ekey, depth+1)
	}
	for _, m := range merges {
		t.merge(file, m, obj, own, loc, key, depth)
	}
}

// merge adds to obj the keys of the mapping (or list of mappings) a merge
// key names that are not set yet: a mapping's own keys (set, even to null)
// win over merged ones, and the first merged mapping over later ones.
func (t *tree) merge(file string, m *yaml.Node, obj map[string]any, set map[string]int, loc []string, key string, depth int) {
	for m.Kind == yaml.AliasNode && m.Alias != nil {
		m = m.Alias
	}
	srcs := []*yaml.Node{m}
	if m.Kind == yaml.SequenceNode {
		srcs = m.Content
	}
	for _, s := range srcs {
		for s.Kind == yaml.AliasNode && s.Alias != nil {
			s = s.Alias
		}
		t.nodes++
		if s.Kind != yaml.MappingNode || depth > maxDepth || t.nodes > maxNodes || t.over {
			continue // the yaml package refuses it, or the limits are reached
		}
		sub := map[string]any{}
		t.mapping(file, s, sub, loc, key, depth+1)
		for k, v := range sub {
			if _, ok := set[k]; !ok {
				set[k] = 0
				obj[k] = v
			}
		}
	}
}

// note records the origin of the value at loc, unless one is known: a
// mapping's own keys are walked before what it merges, and win.
func (t *tree) note(loc []string, e entry) {
	p := pointer(loc)
	if _, ok := t.entries[p]; !ok {
		t.entries[p] = e
	}
}

// isNull reports whether n (through aliases) is a null scalar.
func isNull(n *yaml.Node) bool {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// scalar converts a scalar node by its resolved tag. Numbers that JSON
// cannot hold (.inf, .nan) stay strings, and so does anything else.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		var u uint64
		if n.Decode(&u) == nil {
			return json.Number(strconv.FormatUint(u, 10))
		}
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return n.Value
}
