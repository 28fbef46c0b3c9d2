package jsonschema

import "github.com/santhosh-tekuri/jsonschema/v6/kind"

// Printer formats error messages (hcp-edge's patch: kind.Printer in place
// of golang.org/x/text/message.Printer).
type Printer = kind.Printer

// NewPrinter returns a Printer.
func NewPrinter() *Printer { return kind.NewPrinter() }
