package kind

import "fmt"

// Printer formats the messages of errors. hcp-edge's patch: upstream
// uses golang.org/x/text/message.Printer, whose language and plural tables
// cost about 0.2 MB of the armv7 binary while only English is ever
// printed; this one is fmt.Sprintf (numbers without digit grouping).
type Printer struct{}

// NewPrinter returns a Printer.
func NewPrinter() *Printer { return &Printer{} }

// Sprintf formats like fmt.Sprintf.
func (*Printer) Sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
