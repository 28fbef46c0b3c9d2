package configs

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// The default configuration, the two JSON Schemas (68 kB), the capability
// declarations, the instrument profiles and the recipes are embedded gzip-compressed: the armv7 binary may
// take 12 MB (docs/FOOTPRINT.md). The .json and .yaml files are the
// source, edited by hand and read by editors; `make schemas-gz` writes the
// .gz beside each, and TestCompressedSchemasCurrent fails when one is
// stale.

// gunzip opens an embedded .gz. It cannot fail on a file the test has read;
// if it does the build is broken, and it panics naming the file.
func gunzip(name string, gz []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err == nil {
		var b []byte
		if b, err = io.ReadAll(zr); err == nil {
			return b
		}
	}
	panic(fmt.Sprintf("configs: embedded %s.gz: %v (run make schemas-gz)", name, err))
}
