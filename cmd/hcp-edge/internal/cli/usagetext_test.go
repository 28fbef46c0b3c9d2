package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestUsageGzCurrent: the embedded usage.txt.gz opens to the usage/*.txt
// files, in their names' order, so an edited text without `make
// schemas-gz` fails here; and every file's text is what usageText gives.
func TestUsageGzCurrent(t *testing.T) {
	files, err := filepath.Glob("usage/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("usage texts: %v %v", files, err)
	}
	slices.Sort(files)
	var want bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		want.WriteString("\x00" + name + "\n")
		want.Write(b)
		if got := usageText(name); got != string(b) {
			t.Errorf("usageText(%q) = %.60q, want the file's %.60q", name, got, b)
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(usageGz))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the embedded usage.txt.gz is not usage/*.txt (%d bytes against %d, %v): run make schemas-gz", len(got), want.Len(), err)
	}
}

// TestUsageTextEveryCall: every usageText("NAME") of the package's code has
// its usage/NAME.txt, every file is used, and a missing name says so.
func TestUsageTextEveryCall(t *testing.T) {
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`usageText\("([a-z0-9-]+)"\)`)
	used := map[string]bool{}
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
			if _, err := os.Stat(filepath.Join("usage", m[1]+".txt")); err != nil {
				t.Errorf("%s: usageText(%q) has no usage/%s.txt", f, m[1], m[1])
			}
		}
	}
	files, _ := filepath.Glob("usage/*.txt")
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".txt"); !used[name] {
			t.Errorf("%s: no usageText(%q) in the code", f, name)
		}
	}
	if len(used) < 30 {
		t.Fatalf("%d usage texts found in the code", len(used))
	}
	if got := usageText("no-such"); !strings.Contains(got, "missing") {
		t.Fatalf("a missing text: %q", got)
	}
}
