package reply

import (
	"path"
	"strings"
	"testing"
)

// TestParseArtifactURI: hcp://{session}/artifacts/{name}, and nothing that
// could name a file outside the session's artifacts directory.
func TestParseArtifactURI(t *testing.T) {
	tests := []struct {
		name, uri string
		sid, file string
		ok        bool
	}{
		{"valid", "hcp://s-1/artifacts/raman_spectrum.json", "s-1", "raman_spectrum.json", true},
		{"no scheme", "s-1/artifacts/x.json", "", "", false},
		{"other scheme", "file:///etc/artifacts/passwd", "", "", false},
		{"no artifacts part", "hcp://s-1/x.json", "", "", false},
		{"empty session", "hcp:///artifacts/x.json", "", "", false},
		{"empty name", "hcp://s-1/artifacts/", "", "", false},
		{"dot dot", "hcp://s-1/artifacts/..", "", "", false},
		{"subdirectory", "hcp://s-1/artifacts/a/b.json", "", "", false},
		{"backslash", `hcp://s-1/artifacts/..\x.json`, "", "", false},
		{"session with a slash", "hcp://a/b/artifacts/x.json", "", "", false},
		{"session too long", "hcp://" + strings.Repeat("s", 1000) + "/artifacts/x.json", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sid, file, err := ParseArtifactURI(tt.uri)
			if (err == nil) != tt.ok || sid != tt.sid || file != tt.file {
				t.Fatalf("ParseArtifactURI(%q) = %q, %q, %v", tt.uri, sid, file, err)
			}
		})
	}
}

// FuzzParseArtifactURI: whatever it accepts is one session and one plain
// file name, and rebuilds the URI it came from.
func FuzzParseArtifactURI(f *testing.F) {
	for _, s := range []string{"hcp://s/artifacts/x", "hcp://s/artifacts/../x", "hcp://s/artifacts/a/artifacts/b", "hcp:///artifacts/."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		sid, name, err := ParseArtifactURI(uri)
		if err != nil {
			return
		}
		if sid == "" || name == "" || strings.ContainsAny(sid+name, `/\`) || name == "." || name == ".." || path.Clean(name) != name {
			t.Fatalf("%q accepted as %q, %q", uri, sid, name)
		}
		if "hcp://"+sid+"/artifacts/"+name != uri {
			t.Fatalf("%q does not rebuild from %q, %q", uri, sid, name)
		}
	})
}
