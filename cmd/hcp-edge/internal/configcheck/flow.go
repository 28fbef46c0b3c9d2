package configcheck

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// flowText writes the tree n (the schema layer's pruned copy of the
// configuration) as a YAML document in flow style that decodes to the same
// values, each node on the line it had in the configuration: a decoder's
// error about the pruned text (rigconfig.Parse's) names the configuration's
// own line. It replaces yaml.Marshal, the only user of the yaml package's
// encoder and emitter in the binary (86,016 bytes of the armv7 file,
// docs/FOOTPRINT.md) and whose output had lines of its own.
//
// Strings are written double-quoted (YAML's escapes include JSON's), the
// other scalars of the core schema (null, bool, int, float) plain as they
// were written, a scalar of any other tag with its tag; anchors and aliases
// are kept. Comments are dropped.
func flowText(n *yaml.Node) []byte {
	w := &flowWriter{line: 1}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	w.node(n)
	w.buf.WriteByte('\n')
	return w.buf.Bytes()
}

// flowWriter is flowText's state: the text so far and the line it ends on.
type flowWriter struct {
	buf  bytes.Buffer
	line int
}

// at moves the text to line (when the node is further down) by starting
// new lines, which flow style allows between any two tokens.
func (w *flowWriter) at(line int) {
	for w.line < line {
		w.buf.WriteByte('\n')
		w.line++
	}
}

func (w *flowWriter) node(n *yaml.Node) {
	w.at(n.Line)
	if n.Kind == yaml.AliasNode {
		w.buf.WriteString("*" + n.Value)
		return
	}
	if n.Anchor != "" {
		w.buf.WriteString("&" + n.Anchor + " ")
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.buf.WriteString(", ")
			}
			w.node(n.Content[i])
			w.buf.WriteString(": ")
			w.node(n.Content[i+1])
		}
		w.buf.WriteByte('}')
	case yaml.SequenceNode:
		w.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf.WriteString(", ")
			}
			w.node(c)
		}
		w.buf.WriteByte(']')
	default:
		w.scalar(n)
	}
}

// scalar writes a scalar so that it resolves to the same tag and value.
func (w *flowWriter) scalar(n *yaml.Node) {
	tag := n.ShortTag()
	switch tag {
	case "!!merge": // the merge key
		w.buf.WriteString("<<")
		return
	case "!!str", "!":
		flowQuote(&w.buf, n.Value)
		return
	case "!!null", "!!bool", "!!int", "!!float":
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && plainSafe(n.Value) {
			if n.Value == "" { // an empty plain scalar: null
				w.buf.WriteString("null")
				return
			}
			w.buf.WriteString(n.Value)
			return
		}
	}
	// Any other tag (or a core value written quoted with its tag): the tag
	// and the quoted text.
	if len(tag) > 2 && tag[:2] == "!!" {
		w.buf.WriteString(tag + " ")
	} else {
		w.buf.WriteString("!<" + n.Tag + "> ")
	}
	flowQuote(&w.buf, n.Value)
}

// plainSafe: s can be written plain inside a flow collection (no flow
// indicator, no ": " or " #", no line break).
func plainSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '[', ']', '{', '}', '\n', '\r', '#', ':', '"', '\'':
			return false
		}
	}
	return true
}

// flowQuote writes s as a YAML double-quoted scalar: JSON's escapes, which YAML
// shares, with every control character escaped.
func flowQuote(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r < 0x20 || r == 0x7f || r == 0x85 || r == 0xfeff || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			b.WriteString(strconv.FormatUint(uint64(r)|0x10000, 16)[1:])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
