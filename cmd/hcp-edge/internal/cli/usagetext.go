package cli

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
)

// usageGz is every command's usage text (usage/NAME.txt), in one gzip
// stream (`make schemas-gz`; TestUsageGzCurrent checks it against the
// files): each text after a line "\x00NAME", in the order of the names.
// The 31 texts are 31 kB of prose; gzipped together they take a third of
// that in the armv7 binary (docs/FOOTPRINT.md).
//
//go:embed usage.txt.gz
var usageGz []byte

var (
	usageOnce  sync.Once
	usageTexts map[string]string
)

// usageText is the usage text of the command NAME (usage/NAME.txt), or a
// line saying it is missing (TestUsageTextEveryCall keeps every name in the
// code present).
func usageText(name string) string {
	usageOnce.Do(func() { usageTexts = parseUsage(usageGz) })
	if t, ok := usageTexts[name]; ok {
		return t
	}
	return "usage: hcp-edge " + strings.ReplaceAll(name, "-", " ") + " (its usage text is missing from the binary)\n"
}

// parseUsage opens the gzipped texts (nil on a broken stream: every usage
// then says it is missing).
func parseUsage(gz []byte) map[string]string {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil
	}
	var all bytes.Buffer
	if _, err := all.ReadFrom(zr); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(all.String(), "\x00")[1:] {
		name, text, _ := strings.Cut(part, "\n")
		out[name] = text
	}
	return out
}
