package safestate

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Print writes r for a person: one line per output, then the verdict.
func Print(w io.Writer, r Report) {
	fmt.Fprintf(w, "e-stop via %s (operator %s), %.0f ms\n", r.Via, r.Operator, r.TookMS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTPUT\tACTION\tSAFE\tREAD-BACK / ERROR")
	for _, o := range r.Outputs {
		status, text := "yes", o.ReadBack
		if !o.Confirmed {
			status = "NO"
			if o.Error != "" {
				text = o.Error
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Instrument, o.Action, status, text)
	}
	_ = tw.Flush()
	if r.Error != "" {
		fmt.Fprintf(w, "interlock: %s\n", r.Error)
	}
	if r.Latched {
		fmt.Fprintf(w, "latched: %s (clear with: hcp-edge reset --operator NAME)\n", r.LatchReason)
	}
	if r.AllConfirmed {
		fmt.Fprintln(w, "all outputs confirmed safe")
	} else {
		fmt.Fprintln(w, "NOT ALL OUTPUTS CONFIRMED SAFE")
	}
}
