package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hcp-edge/hcp-edge/session/budget"
)

// statusResult is the daemon's answer to status (its JSON is the --json
// output).
type statusResult struct {
	At          time.Time         `json:"at"`
	Latched     bool              `json:"latched"`
	LatchReason string            `json:"latch_reason,omitempty"`
	Relay       string            `json:"relay"`
	Activity    string            `json:"activity"`          // "idle" or "in process (gases, heater)"
	TripAt      *time.Time        `json:"trip_at,omitempty"` // when the newest trip fired, while latched
	Readings    map[string]string `json:"readings"`
	Values      map[string]any    `json:"values"`
	Margins     []marginView      `json:"margins"`
	Trips       []tripView        `json:"trips"`
	Healthy     map[string]bool   `json:"healthy"`
	Uplink      *uplinkStatus     `json:"uplink,omitempty"` // the broker uplink, when configured
	// Budgets is the live resource usage of every running session against
	// its budgets.
	Budgets []budgetView `json:"budgets,omitempty"`
}

// budgetView is one running session's usage against its budgets.
type budgetView struct {
	SessionID  string        `json:"session_id"`
	Capability string        `json:"capability"`
	State      string        `json:"state"`
	Report     budget.Report `json:"report"`
	created    time.Time
}

// marginView is one limited channel: its value, limits and the distance to
// the nearer one (negative: outside).
type marginView struct {
	Channel string  `json:"channel"`
	Value   float64 `json:"value"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Unit    string  `json:"unit"`
	Margin  float64 `json:"margin"`
	// Applies is false where the limit does not bind now (over_pressure of
	// an idle chamber, the ramp rate with the heater off): a negative
	// margin there is no violation. Context says why.
	Applies bool   `json:"applies"`
	Context string `json:"context,omitempty"`
}

// tripView is one trip event.
type tripView struct {
	Trip      string    `json:"trip"`
	Procedure string    `json:"procedure"`
	Channel   string    `json:"channel"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"` // when the monitor found the condition
}

// printBudgets writes the budgets of status: per session, each budget's
// usage, limit and share of it.
func printBudgets(w io.Writer, bs []budgetView) {
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
