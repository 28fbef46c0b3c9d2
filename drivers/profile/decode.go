package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file reads a profile's YAML into a Profile, and says what is wrong
// with the YAML itself in the words of the profile format: a syntax error
// at the line it is on, an empty file as empty, an unknown key with the
// keys known at its place, a value of the wrong kind with the kind wanted.
// No report names a Go type.

// decode reads data into p. It records every problem of the YAML and
// returns false when there is one; v.root is then the document (nil if it
// did not parse).
func (v *validator) decode(data []byte, p *Profile) bool {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&root)
	if errors.Is(err, io.EOF) {
		v.add(1, "(file)", "the profile is empty: a profile is a mapping of model, manual, family, kind and channels (docs/INSTRUMENTS.md)")
		return false
	}
	if err != nil {
		v.syntax(data, err)
		return false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		v.syntax(data, err)
		return false
	default:
		v.add(max(next.Line, 1), "(file)", "a second YAML document (after `---`): a profile is one document; put each model in its own file")
		return false
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	doc = unalias(doc)
	switch {
	case doc.Kind == yaml.ScalarNode && doc.Tag == "!!null":
		v.add(1, "(file)", "the profile is empty: a profile is a mapping of model, manual, family, kind and channels (docs/INSTRUMENTS.md)")
		return false
	case doc.Kind != yaml.MappingNode:
		v.add(max(doc.Line, 1), "(file)", "want a mapping of model, manual, family, kind and channels, got %s", got(doc))
		return false
	}
	v.root = &root
	n := len(v.problems)
	v.shape(doc, reflect.TypeFor[Profile](), "")
	if len(v.problems) > n {
		return false
	}
	// The strict decode is the last word: what the walk above let through
	// and the decoder still refuses is reported in its own terms, its Go
	// type names put in the format's words.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(p); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				v.add(lineOfYAMLError(errors.New(m)), "(file)", "%s", plainWords(m))
			}
		} else {
			v.add(lineOfYAMLError(err), "(file)", "%s", plainWords(err.Error()))
		}
		return false
	}
	return true
}

// syntax records a YAML syntax error at the line it is on.
func (v *validator) syntax(data []byte, err error) {
	line := SyntaxLine(data, err)
	text := ""
	if lines := bytes.SplitAfter(data, []byte("\n")); line <= len(lines) {
		text = string(lines[line-1])
	}
	msg := yamlLineRE.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "")
	v.add(line, "(file)", "does not parse: %s%s", msg, syntaxHint(msg, text))
}

// SyntaxLine returns the line (from 1) of a YAML syntax error err that
// parsing data (every document of it, with go.yaml.in/yaml/v3) returned.
// The yaml package numbers such an error by the line where the construct
// around it began (a list, a flow mapping: often many lines above the
// mistake, or one line early), so the line is found again: it is the
// shortest prefix of data, from that line on, whose parse fails the same
// way (a binary search: about 20 parses of a 1 MiB file). config check
// places the configuration's own syntax errors with it too.
func SyntaxLine(data []byte, err error) int {
	reported := lineOfYAMLError(err)
	whole := parseAll(data) // the reference: err may come from another way of parsing
	if whole == nil {
		return reported
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(k int) bool {
		e := parseAll(bytes.Join(lines[:k], nil))
		return e != nil && e.Error() == whole.Error()
	}
	lo, hi := min(lineOfYAMLError(whole), len(lines)), len(lines)
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(lo, 1)
}

var yamlLineRE = regexp.MustCompile(`^line \d+: `)

// parseAll parses every document of b, returning the first error.
func parseAll(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// syntaxHint says what a YAML parser's message usually means in a
// profile, given the text of the line it is on.
func syntaxHint(msg, text string) string {
	switch {
	case strings.Contains(msg, "tab character"), strings.HasPrefix(strings.TrimLeft(text, " "), "\t"):
		return " (YAML indents with spaces, never tabs)"
	case strings.Contains(msg, "expected '-' indicator"), strings.Contains(msg, "did not find expected key"),
		strings.Contains(msg, "mapping values are not allowed"):
		return " (check this line's indentation against the lines above, and a missing space after a colon)"
	case strings.Contains(msg, "expected ',' or"):
		return " (a bracket or brace not closed, or a comma missing, on this line)"
	case strings.Contains(msg, "end of stream"):
		return " (a quote or bracket opened here is never closed)"
	}
	return ""
}

// lineOfYAMLError finds "line N" in a yaml error message.
func lineOfYAMLError(err error) int {
	var n int
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		digits := s[i+5:]
		if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = digits[:j]
		}
		n, _ = strconv.Atoi(digits)
	}
	return max(n, 1)
}

// Names of the format's mappings, for reports.
var mappingNames = map[reflect.Type]string{
	reflect.TypeFor[Profile](): "the profile",
	reflect.TypeFor[Channel](): "a channel",
	reflect.TypeFor[Manual]():  "the manual",
}

// fields maps the YAML keys of a struct type to their field types.
func fields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// shape checks the mapping n against the struct type t: every key one the
// format knows at that place, every value of the kind its key takes. key
// is the mapping's key path ("" at the top).
func (v *validator) shape(n *yaml.Node, t reflect.Type, key string) {
	known := fields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			continue // a merge key: the strict decode checks what it brings
		}
		ft, ok := known[k.Value]
		if !ok {
			names := make([]string, 0, len(known))
			for name := range known {
				names = append(names, name)
			}
			sort.Strings(names)
			where := mappingNames[t]
			if key != "" && t == reflect.TypeFor[Channel]() {
				where = "channel " + strings.TrimSuffix(strings.TrimPrefix(key, "channels["), "]")
			}
			v.add(k.Line, join(key, k.Value), "unknown key %q in %s (known: %s)", k.Value, where, strings.Join(names, ", "))
			continue
		}
		v.value(val, ft, join(key, k.Value))
	}
}

// value checks that the node n can be read as a value of type t.
func (v *validator) value(n *yaml.Node, t reflect.Type, key string) {
	n = unalias(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // absent
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := describe(t)
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			v.add(n.Line, key, "want %s, got %s", want, got(n))
			return
		}
		v.shape(n, t, key)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			v.add(n.Line, key, "want %s, got %s", want, got(n))
			return
		}
		for i, item := range n.Content {
			v.value(item, t.Elem(), fmt.Sprintf("%s[%s]", key, itemName(item, i)))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			v.add(n.Line, key, "want %s, got %s", want, got(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v.value(n.Content[i+1], t.Elem(), join(key, n.Content[i].Value))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			v.add(n.Line, key, "want %s, got %s", want, got(n))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			v.add(n.Line, key, "want %s, got %s", want, got(n))
		}
	}
}

// itemName names a list item in a key path: a channel by its name, any
// other item by its index.
func itemName(n *yaml.Node, i int) string {
	n = unalias(n)
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == "name" && n.Content[j+1].Kind == yaml.ScalarNode && n.Content[j+1].Value != "" {
				return n.Content[j+1].Value
			}
		}
	}
	return strconv.Itoa(i)
}

// describe says what a value of type t is written as.
func describe(t reflect.Type) string {
	if name, ok := mappingNames[t]; ok {
		return strings.TrimPrefix(strings.TrimPrefix(name, "the "), "a ") + " (a mapping of keys)"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		e := t.Elem()
		if _, ok := mappingNames[e]; ok {
			return "a list of " + strings.TrimPrefix(mappingNames[e], "a ") + "s"
		}
		return "a list of " + plural(describe(e)) + ", e.g. [" + example(e) + "]"
	case reflect.Map:
		return "a mapping of keys to " + plural(describe(t.Elem()))
	}
	return t.Kind().String()
}

func plural(d string) string {
	switch d {
	case "text":
		return "words"
	case "a whole number":
		return "whole numbers"
	case "a number":
		return "numbers"
	}
	return d
}

func example(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "0, 1200"
	case reflect.String:
		if t == reflect.TypeFor[Lack]() {
			return string(NoCommsWatchdog)
		}
		return "a, b"
	}
	return "1, 2"
}

// got says what a node is.
func got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 || n.Tag == "!!str" {
			return fmt.Sprintf("%q", n.Value)
		}
		return n.Value
	}
	return "nothing"
}

func unalias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// goTypeRE matches what the yaml package says of Go types in its messages.
var goTypeRE = regexp.MustCompile(`(?:in type|into) \S+`)

// plainWords puts a yaml decode message in the format's words: no Go type.
func plainWords(m string) string {
	m = strings.TrimPrefix(m, "yaml: ")
	m = yamlLineRE.ReplaceAllString(m, "")
	m = strings.Replace(m, "field ", "unknown key ", 1)
	m = strings.Replace(m, " not found", "", 1)
	m = strings.Replace(m, "cannot unmarshal", "cannot read", 1)
	return strings.TrimSpace(goTypeRE.ReplaceAllString(m, ""))
}
