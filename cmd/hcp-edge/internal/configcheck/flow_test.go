package configcheck

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFlowTextDecodesAlike: the flow text of a document decodes to what
// the document decodes to, for every shipped configuration and for the
// scalars a configuration may hold (quoted numbers, block strings, tags,
// anchors, empty values, flow indicators inside strings).
func TestFlowTextDecodesAlike(t *testing.T) {
	docs := map[string]string{
		"scalars": `a: 1
b: "1"
c: '0x1F'
d: 0x1F
e: 1.5e3
f: .inf
g: ~
h:
i: true
j: "yes"
k: yes
l: |
  two
  lines
m: >
  folded
  text
n: "quote \" and back\\slash, tab\t"
o: 2026-12-07
p: !!binary aGVsbG8=
q: 500 sccm, fast
r: "a: b"
s: "#not a comment"
t: [1, "two", {u: 3}]
v: &anchor {w: 1}
x: *anchor
y: {<<: *anchor, z: 2}
`,
	}
	files, _ := filepath.Glob(filepath.Join(configsDir, "*.yaml"))
	drafts, _ := filepath.Glob(filepath.Join(configsDir, "drafts", "*.yaml"))
	for _, f := range append(files, drafts...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(f)] = string(b)
	}
	if len(docs) < 4 {
		t.Fatalf("only %d documents (configs/*.yaml not found)", len(docs))
	}
	for name, doc := range docs {
		var want, got any
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatal(err)
		}
		text := flowText(&n)
		if err := yaml.Unmarshal(text, &got); err != nil {
			t.Fatalf("%s: the flow text does not decode: %v\n%s", name, err, text)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the flow text decodes to\n%#v\nthe document to\n%#v\ntext:\n%s", name, got, want, text)
		}
	}
}

// TestFlowTextKeepsLines: each value is on the line it had, so that a
// decoder's error names the configuration's line.
func TestFlowTextKeepsLines(t *testing.T) {
	doc := "agent:\n  name: x\n\n  # a comment\nrig:\n  furnace:\n    limit: hot\n  list:\n    - 1\n    - 2\n"
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	text := flowText(&n)
	var v struct {
		Agent struct{ Name string }
		Rig   struct {
			Furnace struct{ Limit int }
			List    []int
		}
	}
	err := yaml.Unmarshal(text, &v)
	if err == nil || !strings.Contains(err.Error(), "line 7:") {
		t.Fatalf("decode error %v, want one at line 7 (limit: hot)\n%s", err, text)
	}
	lines := strings.Split(string(text), "\n")
	if !strings.Contains(lines[8], "1") || !strings.Contains(lines[9], "2") {
		t.Fatalf("the list's items are not on lines 9 and 10:\n%s", text)
	}
}
