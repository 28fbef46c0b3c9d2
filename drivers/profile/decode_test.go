package profile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/drivers/profile"
)

// goWords are what the yaml package says of Go types and YAML tags: no
// report of the profile check may carry them.
var goWords = regexp.MustCompile(`profile\.[A-Z]|\[\]profile|map\[string\]|\*int|!!(str|int|float|bool|map|seq|null)|unmarshal|in type `)

// TestBrokenCorpusSpeaksTheFormat: no report of the broken corpus names a
// Go type or a YAML tag.
func TestBrokenCorpusSpeaksTheFormat(t *testing.T) {
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = profile.Parse(f, data)
		for _, p := range problems(err) {
			if goWords.MatchString(p.Message) || goWords.MatchString(p.Key) {
				t.Errorf("%v: names a Go type or a YAML tag", p)
			}
		}
	}
}

// TestSyntaxErrorAtItsLine: in every shipped profile, a channel written on
// one line whose closing brace is forgotten, and a channel key indented by
// one space too few, are each reported at their own line, whatever line
// the yaml package numbers them by.
func TestSyntaxErrorAtItsLine(t *testing.T) {
	shipped := configs.Profiles()
	n := 0
	for _, name := range shipped.Names() {
		lines := strings.SplitAfter(string(shipped[name]), "\n")
		for i, l := range lines {
			var broken string
			switch {
			case strings.HasPrefix(l, "  - {") && strings.HasSuffix(l, "}\n") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  - "):
				broken = strings.TrimSuffix(l, "}\n") + "\n"
			case strings.HasPrefix(l, "    ") && !strings.HasPrefix(l, "     ") && strings.Contains(l, ": ") && i > 0 && strings.HasPrefix(lines[i-1], "    "):
				broken = l[1:]
			default:
				continue
			}
			n++
			text := strings.Join(lines[:i], "") + broken + strings.Join(lines[i+1:], "")
			t.Run(fmt.Sprintf("%s:%d", name, i+1), func(t *testing.T) {
				_, err := profile.Parse(name, []byte(text))
				ps := problems(err)
				if len(ps) != 1 || ps[0].Line != i+1 || !strings.Contains(ps[0].Message, "does not parse") {
					t.Fatalf("line %d broken (%q): want one problem at line %d, got\n%v", i+1, broken, i+1, err)
				}
			})
		}
	}
	if n < 20 {
		t.Fatalf("%d lines broken, want at least 20", n)
	}
}

// TestEmptyProfile: a profile with nothing in it says it is empty, at line 1.
func TestEmptyProfile(t *testing.T) {
	for _, text := range []string{"", "\n\n", "# a profile for our new controller\n", "---\n", "~\n"} {
		_, err := profile.Parse("new.yaml", []byte(text))
		ps := problems(err)
		if len(ps) != 1 || ps[0].Line != 1 || !strings.Contains(ps[0].Message, "the profile is empty") {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// FuzzParse: Parse never panics, and a refusal is a list of problems each
// at a line of the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	for _, name := range files {
		b, _ := os.ReadFile(name)
		f.Add(b)
	}
	for _, b := range configs.Profiles() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.Parse("f.yaml", data)
		if err == nil {
			if p == nil {
				t.Fatal("nil profile, nil error")
			}
			return
		}
		ps := problems(err)
		if len(ps) == 0 {
			t.Fatalf("a refusal without a problem: %v", err)
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, q := range ps {
			if q.Line < 1 || q.Line > lines {
				t.Fatalf("%v: line outside the file's 1..%d", q, lines)
			}
		}
	})
}
