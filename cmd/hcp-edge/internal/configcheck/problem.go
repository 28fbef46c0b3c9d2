package configcheck

import (
	"fmt"
	"strings"
)

// Problem is one finding of the check.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 0: the file as a whole
	Column  int    `json:"column,omitempty"`
	Key     string `json:"key,omitempty"` // dotted key path, e.g. rig.mfcs[2].full_scale
	Message string `json:"message"`
}

// String formats p as FILE:LINE: KEY: MESSAGE (the line and key when known).
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Result is what the check reports.
type Result struct {
	File         string    `json:"file"`
	Valid        bool      `json:"valid"`
	Problems     []Problem `json:"problems"`
	Capabilities []string  `json:"capabilities,omitempty"` // name@version of each declaration checked
	Notes        []string  `json:"notes,omitempty"`
}
