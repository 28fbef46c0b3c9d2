package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/commission"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
)

// channelRow is one channel of a profiled instrument, as probe reads it.
type channelRow struct {
	Instrument string `json:"instrument"`
	Profile    string `json:"profile"`
	regmap.Reading
	// Of a serial instrument (Table "serial"): what was sent, and the
	// field as it answered.
	Command string `json:"command,omitempty"`
	RawText string `json:"raw_text,omitempty"`
}

// probeChannels reads every channel of every profiled instrument through
// its profile (Modbus registers and bits, the mass-flow controllers' data
// frame columns, the gauge controller's gauges): read-only.
func probeChannels(ctx context.Context, in *rigconfig.Instruments, timeout time.Duration) []channelRow {
	var rows []channelRow
	add := func(inst, prof string, read func(context.Context) []regmap.Reading) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, r := range read(c) {
			rows = append(rows, channelRow{Instrument: inst, Profile: prof, Reading: r})
		}
	}
	for _, f := range in.Zones {
		if f != nil {
			add(f.String(), f.Profile().ID, f.ReadChannels)
		}
	}
	for _, m := range in.Modules {
		if m != nil {
			add(m.String(), m.Profile().ID, m.ReadChannels)
		}
	}
	serial := func(inst, prof string, read func(context.Context) []profile.Reading) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, r := range read(c) {
			rows = append(rows, channelRow{Instrument: inst, Profile: prof, Command: r.Command, RawText: r.Raw,
				Reading: regmap.Reading{Channel: r.Channel, Table: "serial", Value: r.Value, Unit: r.Unit, Range: r.Range, InRange: r.InRange, Error: r.Error}})
		}
	}
	for _, m := range in.MFCs {
		serial(m.String(), m.Model().Profile().ID, m.ReadChannels)
	}
	for _, g := range in.Gauges {
		if g != nil {
			serial(g.String(), g.Model().Profile().ID, g.ReadChannels)
		}
	}
	return rows
}

// badChannels counts the channels that did not answer or read outside
// their declared range.
func badChannels(rows []channelRow) int {
	n := 0
	for _, r := range rows {
		if r.Error != "" || !r.InRange {
			n++
		}
	}
	return n
}

// printChannels prints the channel table.
func printChannels(w io.Writer, rows []channelRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTRUMENT\tCHANNEL\tWHERE\tRAW\tVALUE\tRANGE\tCHECK")
	for _, r := range rows {
		name := r.Channel
		if r.Name != "" {
			name += " (" + r.Name + ")"
		}
		where := fmt.Sprintf("%s %d", r.Table, r.Address)
		value, raw, check := strconv.FormatFloat(r.Value, 'g', 6, 64)+" "+r.Unit, strconv.FormatInt(r.Raw, 10), "ok"
		if r.Table == "serial" {
			where, raw = "serial "+strconv.Quote(r.Command), r.RawText
			if r.Unit == "" { // a text column (an MFC's gas)
				value = r.RawText
			}
		}
		rng := "-"
		if len(r.Range) == 2 {
			rng = fmt.Sprintf("%g..%g", r.Range[0], r.Range[1])
		}
		switch {
		case r.Error != "":
			value, raw, check = "", "", "FAIL: "+r.Error
		case !r.InRange:
			check = "OUT OF RANGE"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Instrument+" ("+r.Profile+")", name, where, raw, value, rng, check)
	}
	_ = tw.Flush()
}

// printWriteCheck prints a write check's outputs (nothing without one).
func printWriteCheck(w io.Writer, r *commission.Report) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nWRITE CHECK by %s at %s: %s; then each output to its other level and back, read back each time\n",
		r.Operator, r.At, strings.Join(r.Prepared, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTPUT\tSAFE\tFOUND\tCHECK")
	for _, o := range r.Outputs {
		check := "confirmed (both levels, left as found)"
		if !o.Confirmed {
			check = "NOT CONFIRMED: " + o.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Name, onOff(o.Safe), onOff(o.Initial), check)
	}
	_ = tw.Flush()
	if len(r.Unconfirmed) > 0 {
		fmt.Fprintf(w, "\nwiring not confirmed: %v\n", r.Unconfirmed)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
