package configs

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

// Capabilities are configs/capabilities/*.json, the shipped capability
// declarations, by name ("capabilities/<name>.json"): the agent's default
// when its configuration names no capabilities directory and none lies
// beside the configuration file. Embedded gzip-compressed (gz.go).
var Capabilities = sync.OnceValue(func() Files { return unpack(capabilitiesGz, "capabilities/*.json.gz") })

//go:embed capabilities/*.json.gz
var capabilitiesGz embed.FS

// Files are embedded files by name, in the order of Names.
type Files map[string][]byte

// Names are the files' names, sorted.
func (f Files) Names() []string {
	out := make([]string, 0, len(f))
	for n := range f {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// unpack opens every embedded .gz of pattern, each under its name without
// .gz.
func unpack(efs embed.FS, pattern string) Files {
	names, _ := fs.Glob(efs, pattern)
	out := Files{}
	for _, n := range names {
		gz, err := efs.ReadFile(n)
		if err != nil {
			panic(err) // an embedded file the glob listed
		}
		out[strings.TrimSuffix(n, ".gz")] = gunzip(n, gz)
	}
	return out
}
