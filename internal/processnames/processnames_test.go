package processnames

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// processWords are the materials, precursors and recipe inputs of the
// shipped processes, in any case.
var processWords = regexp.MustCompile(`(?i)mos2|ws2|graphene|h2s|ch4|sulfur_source`)

// mayKnow are the folders whose Go may name a process (package doc).
var mayKnow = []string{"firmware-sim", "session/analysis"}

// TestNoProcessNameInGo: no non-test Go file outside firmware-sim and
// session/analysis names a material, a precursor or a recipe input, not
// even in a comment.
func TestNoProcessNameInGo(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			for _, k := range mayKnow {
				if rel == k {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for i, line := range bytes.Split(b, []byte("\n")) {
			for _, m := range processWords.FindAllIndex(line, -1) {
				found = append(found, rel+":"+strconv.Itoa(i+1)+": "+string(line[m[0]:m[1]])+": "+strings.TrimSpace(string(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d non-test files: the walk missed the module", files)
	}
	if len(found) > 0 {
		t.Fatalf("process names in Go outside %s (they belong in the recipes, the capability declarations, the rig configurations or the gate's rules):\n%s",
			strings.Join(mayKnow, " and "), strings.Join(found, "\n"))
	}
}

// TestWordsMatch: the list catches each word however it is written, and
// the walk's exemptions are folders of the module.
func TestWordsMatch(t *testing.T) {
	for _, s := range []string{`"MoS2"`, "mos2-task.json", "analysis.WS2", "// Graphene on copper", "flow.H2S", "plant.CH4", `"sulfur_source"`, "Sulfur_Source"} {
		if !processWords.MatchString(s) {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"H2", "Ar", "MoO3", "sulfur", "source", "mos"} {
		if processWords.MatchString(s) {
			t.Errorf("%q caught", s)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range mayKnow {
		if st, err := os.Stat(filepath.Join(root, k)); err != nil || !st.IsDir() {
			t.Errorf("exempt folder %s: %v", k, err)
		}
	}
}

// moduleRoot is the directory holding go.mod, from the test's directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
