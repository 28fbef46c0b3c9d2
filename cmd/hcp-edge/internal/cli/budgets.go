package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"hcp-edge/cmd/hcp-edge/internal/reply"
)

// printBudgets writes the budgets of status: per session, each budget's
// usage, limit and share of it.
func printBudgets(w io.Writer, bs []reply.Budget) {
	if len(bs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tBUDGET\tUSED\tLIMIT\tUNIT\tSHARE")
	for _, b := range bs {
		for _, l := range b.Report.Lines {
			name := string(l.Budget)
			if l.Gas != "" {
				name += "." + l.Gas
			}
			limit, share := "-", "-"
			if l.Limit != nil {
				limit = strconv.FormatFloat(*l.Limit, 'g', 6, 64)
				if *l.Limit > 0 {
					share = fmt.Sprintf("%.0f%%", 100*l.Used / *l.Limit)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.SessionID, name, strconv.FormatFloat(l.Used, 'g', 6, 64), limit, l.Unit, share)
		}
		if ex := b.Report.Exceeded; ex != nil {
			fmt.Fprintf(tw, "%s\tEXCEEDED\t%s\t\t\t\n", b.SessionID, ex.Error())
		}
	}
	_ = tw.Flush()
}
