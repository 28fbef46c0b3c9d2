package profile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"hcp-edge/configs"
	"hcp-edge/drivers/profile"
)

// TestBrokenCorpus: every profile of testdata/broken breaks one rule and is
// refused at the FILE:LINE and key its first line names
// ("# want: LINE KEY MESSAGE-PART").
func TestBrokenCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	if len(files) < 10 {
		t.Fatalf("%d broken profiles, want at least 10", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want := strings.SplitN(strings.TrimPrefix(first, "# want: "), " ", 3)
			if len(want) != 3 {
				t.Fatalf("first line %q is not # want: LINE KEY MESSAGE", first)
			}
			p, err := profile.Parse(f, data)
			if err == nil || p != nil {
				t.Fatalf("accepted")
			}
			if !errors.Is(err, profile.ErrProfile) {
				t.Fatalf("%v does not wrap ErrProfile", err)
			}
			line, _ := strconv.Atoi(want[0])
			var found bool
			for _, e := range problems(err) {
				if e.File == f && e.Line == line && e.Key == want[1] && strings.Contains(e.Message, want[2]) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want %s:%d: %s: …%s…; got:\n%v", f, line, want[1], want[2], err)
			}
			t.Log(err)
		})
	}
}

func problems(err error) []*profile.Problem {
	var out []*profile.Problem
	var walk func(error)
	walk = func(e error) {
		if p, ok := e.(*profile.Problem); ok {
			out = append(out, p)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		} else if u := errors.Unwrap(e); u != nil {
			walk(u)
		}
	}
	walk(err)
	return out
}

// TestTooLarge: a profile over 1 MiB is refused unread.
func TestTooLarge(t *testing.T) {
	data := append([]byte("model: x\n"), bytes.Repeat([]byte("# padding\n"), profile.MaxSize/10+1)...)
	if _, err := profile.Parse("big.yaml", data); err == nil || !strings.Contains(err.Error(), "big.yaml:1: (file): ") {
		t.Fatalf("a %d-byte profile: %v", len(data), err)
	}
}

// TestShippedProfiles: every shipped profile parses and is valid against
// configs/profile.schema.json (the editors' schema agrees with the Go rules).
func TestShippedProfiles(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := os.ReadFile("../../configs/profile.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sch))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("profile.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("profile.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	shipped := configs.Profiles()
	names := shipped.Names()
	if len(names) < 4 {
		t.Fatalf("%d shipped profiles", len(names))
	}
	for _, n := range names {
		data := shipped[n]
		if _, err := profile.Parse(n, data); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err := s.Validate(inst); err != nil {
			t.Errorf("%s against the schema: %v", n, err)
		}
	}
}

// TestSchemaRefusesUnknownFamily: the schema refuses what it can see of the
// corpus too (a broken profile is not valid against it, where the schema
// can express the rule).
func TestSchemaRefusesUnknownFamily(t *testing.T) {
	data, _ := os.ReadFile("testdata/broken/unknown-family.yaml")
	var v any
	_ = yaml.Unmarshal(data, &v)
	j, _ := json.Marshal(v)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	c := jsonschema.NewCompiler()
	sch, _ := os.ReadFile("../../configs/profile.schema.json")
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(sch))
	_ = c.AddResource("profile.schema.json", doc)
	s, err := c.Compile("profile.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Validate(inst) == nil {
		t.Fatal("the schema accepts family bacnet")
	}
}
