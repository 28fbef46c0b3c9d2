package configcheck

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Locate finds the node of a dotted key path in root (a document's
// content): at a mapping it takes the longest key that prefixes the rest of
// the path, so that keys with dots in them ("furnace.setpoint") resolve; at
// a list it takes "[i]". It returns the line and column of the deepest node
// reached (a mapping entry's key) and whether the whole path resolved.
func Locate(root *yaml.Node, path string) (line, col int, found bool) {
	n := root
	line, col = n.Line, n.Column
	rest := path
	for rest != "" {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if (rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[")) &&
					(best < 0 || len(k) > len(n.Content[best].Value)) {
					best = i
				}
			}
			if best < 0 {
				return line, col, false
			}
			k := n.Content[best]
			line, col = k.Line, k.Column
			rest = strings.TrimPrefix(rest[len(k.Value):], ".")
			n = n.Content[best+1]
		case yaml.SequenceNode:
			if !strings.HasPrefix(rest, "[") {
				return line, col, false
			}
			end := strings.IndexByte(rest, ']')
			i, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil || i < 0 || i >= len(n.Content) {
				return line, col, false
			}
			n = n.Content[i]
			line, col = n.Line, n.Column
			rest = strings.TrimPrefix(rest[end+1:], ".")
		default:
			return line, col, false
		}
	}
	return line, col, true
}

// join appends a mapping key to a dotted key path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
