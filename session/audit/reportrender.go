package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/envelope"
)

// SetLocation makes the renderers print times in loc, the location the
// periods were cut in (ReportOpts.Location): a Report decoded from JSON
// prints in UTC until told.
func (r *Report) SetLocation(loc *time.Location) { r.loc = loc }

// WriteJSON prints r as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText prints r for a terminal: the window and its totals, then each
// period's sections as aligned columns (an empty section is left out).
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n%s\n", r.title(), r.summary())
	fmt.Fprintf(tw, "envelope versions: %s\n", orNone(strings.Join(r.Envelopes, ", ")))
	for _, p := range r.Periods {
		fmt.Fprintf(tw, "\n== %s: %s ==\n%s\n", r.periodName(p), plural(p.Entries, "entry"), p.Totals.line())
		for _, s := range r.sections(p, false) {
			fmt.Fprintf(tw, "%s (%d)\n", s.title, len(s.rows))
			fmt.Fprintf(tw, "  %s\n", strings.Join(s.head, "\t"))
			for _, row := range s.rows {
				fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
			}
		}
	}
	return tw.Flush()
}

// WriteHTML prints r as one self-contained, printable HTML page (no
// script, no external resource).
func (r Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(esc(r.title()))
	b.WriteString(`</title><style>
body{font:11pt/1.35 system-ui,sans-serif;margin:2em;color:#111}
h1{font-size:15pt}h2{font-size:13pt;border-bottom:1px solid #888;margin-top:1.6em;page-break-after:avoid}
h3{font-size:11pt;margin:1em 0 .3em}table{border-collapse:collapse;width:100%;font-size:9.5pt;page-break-inside:auto}
th,td{border:1px solid #bbb;padding:2px 5px;text-align:left;vertical-align:top}th{background:#eee}
tr{page-break-inside:avoid}.quiet{color:#666}@media print{body{margin:0}}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n<p>envelope versions: %s</p>\n", esc(r.title()), esc(r.summary()),
		esc(orNone(strings.Join(r.Envelopes, ", "))))
	for _, p := range r.Periods {
		fmt.Fprintf(&b, "<h2>%s</h2>\n<p class=\"quiet\">%s: %s</p>\n", esc(r.periodName(p)), plural(p.Entries, "entry"), esc(p.Totals.line()))
		for _, s := range r.sections(p, true) {
			fmt.Fprintf(&b, "<h3>%s (%d)</h3>\n<table><tr>", esc(s.title), len(s.rows))
			for _, h := range s.head {
				b.WriteString("<th>" + esc(h) + "</th>")
			}
			b.WriteString("</tr>\n")
			for _, row := range s.rows {
				b.WriteString("<tr>")
				for _, c := range row {
					b.WriteString("<td>" + esc(c) + "</td>")
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		}
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;")

func esc(s string) string { return htmlEscaper.Replace(s) }

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

func (r Report) title() string {
	return fmt.Sprintf("hcp-edge audit report %s to %s (%s), by %s", r.when(r.Since, "2006-01-02 15:04"),
		r.when(r.Until, "2006-01-02 15:04"), r.Zone, r.Period)
}

func (r Report) summary() string {
	s := fmt.Sprintf("%d entries", r.Entries)
	if r.Entries > 0 {
		s += fmt.Sprintf(" (seq %d to %d)", r.FirstSeq, r.LastSeq)
	}
	return s + "; " + r.Totals.line()
}

func (t Totals) line() string {
	parts := []string{plural(t.Trips, "trip"), plural(t.EStops, "e-stop"), plural(t.Refusals, "refusal"), plural(t.Approvals, "approval"),
		plural(t.Questions, "question"), plural(t.Overrides, "override"), plural(t.LeakChecks, "leak check"),
		plural(t.NVWrites, "non-volatile write")}
	if t.Other > 0 {
		parts = append(parts, plural(t.Other, "other entry"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(what, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func (r Report) when(t time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	loc := r.loc
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(layout)
}

func (r Report) periodName(p PeriodSummary) string {
	if r.Period == PeriodWeek {
		return "week of " + r.when(p.Start, "Mon 2006-01-02")
	}
	return r.when(p.Start, "Mon 2006-01-02")
}

// section is one table of a period: its title, column heads and rows.
type section struct {
	title string
	head  []string
	rows  [][]string
}

// sections are p's non-empty tables; all lists every reading of a refusal
// (the page), not just the one its rule compared (the terminal).
func (r Report) sections(p PeriodSummary, all bool) []section {
	t := func(at time.Time) string { return r.when(at, "15:04:05.000") }
	seq := func(n uint64) string { return strconv.FormatUint(n, 10) }
	var out []section
	add := func(title string, head []string, n int, row func(i int) []string) {
		if n == 0 {
			return
		}
		s := section{title: title, head: head}
		for i := range n {
			s.rows = append(s.rows, row(i))
		}
		out = append(out, s)
	}
	add("trips", []string{"TIME", "SEQ", "TRIP", "PROCEDURE", "READING", "REACTION", "CAUSE"}, len(p.Trips), func(i int) []string {
		x := p.Trips[i]
		var rd string
		if x.Reading != nil {
			rd = reading(*x.Reading)
		}
		return []string{t(x.At), seq(x.Seq), x.Trip, x.Procedure, dash(rd), ms(x.ReactionMS), x.Cause}
	})
	add("e-stops", []string{"TIME", "SEQ", "VIA", "WHO", "OUTCOME", "REACTION"}, len(p.EStops), func(i int) []string {
		x := p.EStops[i]
		return []string{t(x.At), seq(x.Seq), x.Via, x.Who, dash(x.Outcome), ms(x.ReactionMS)}
	})
	add("refusals by rule", []string{"RULE", "COUNT", "LAST", "SEQ", "LAST REASON", "READINGS"}, len(p.Refusals), func(i int) []string {
		x := p.Refusals[i]
		why, rds := x.Reason, readings(x.Readings, all)
		if x.Withheld {
			why, rds = "[withheld: a T3/T4 session]", ""
		}
		return []string{x.Rule, strconv.Itoa(x.Count), t(x.LastAt), seq(x.LastSeq), dash(why), dash(rds)}
	})
	add("approvals", []string{"TIME", "SEQ", "DECISION", "WHO", "SIGNATURE", "RISK", "SESSION"}, len(p.Approvals), func(i int) []string {
		x := p.Approvals[i]
		return []string{t(x.At), seq(x.Seq), x.Decision, x.Who, dash(x.Signature), dash(x.RiskLevel), dash(x.SessionID)}
	})
	add("approvers", []string{"WHO", "APPROVALS"}, len(p.Approvers), func(i int) []string {
		return []string{p.Approvers[i].Name, strconv.Itoa(p.Approvers[i].Count)}
	})
	add("questions and answers", []string{"TIME", "SEQ", "KIND", "SESSION", "CHECKPOINT", "QUESTION", "ANSWER", "WHO"}, len(p.Questions), func(i int) []string {
		x := p.Questions[i]
		q, a := x.Question, x.Answer
		if x.Withheld {
			q, a = "[withheld: a T3/T4 session]", ""
		}
		return []string{t(x.At), seq(x.Seq), x.Kind, dash(x.SessionID), dash(x.Checkpoint), dash(q), dash(a), dash(x.Who)}
	})
	add("overrides", []string{"TIME", "SEQ", "OP", "WHO", "TARGET", "OUTCOME"}, len(p.Overrides), func(i int) []string {
		x := p.Overrides[i]
		out := x.Outcome
		if x.Error != "" {
			out += ": " + x.Error
		}
		return []string{t(x.At), seq(x.Seq), x.Op, x.Who, dash(x.Target), dash(out)}
	})
	add("leak checks", []string{"ACCEPTED", "SEQ", "SESSION", "OUTCOME", "ENDED"}, len(p.LeakChecks), func(i int) []string {
		x := p.LeakChecks[i]
		end := "-"
		if !x.EndedAt.IsZero() {
			end = r.when(x.EndedAt, "2006-01-02 15:04:05")
		}
		return []string{t(x.At), seq(x.Seq), x.SessionID, dash(x.Outcome), end}
	})
	add("writes to non-volatile registers (the agent's, at start)", []string{"TIME", "SEQ", "INSTRUMENT", "CHANNEL", "VALUE"}, len(p.NVWrites), func(i int) []string {
		x := p.NVWrites[i]
		return []string{t(x.At), seq(x.Seq), x.Instrument, x.Channel, strconv.FormatFloat(x.Value, 'g', -1, 64)}
	})
	add("other entries (kinds this report does not know)", []string{"KIND", "COUNT"}, len(p.Other), func(i int) []string {
		return []string{p.Other[i].Name, strconv.Itoa(p.Other[i].Count)}
	})
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ms(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// reading is "channel value unit (limit L)".
func reading(x envelope.Reading) string {
	s := x.Channel + " " + strconv.FormatFloat(x.Value, 'g', 6, 64)
	if x.Unit != "" {
		s += " " + x.Unit
	}
	if x.Limit != nil {
		s += " (limit " + strconv.FormatFloat(*x.Limit, 'g', 6, 64) + ")"
	}
	return s
}

// readings are a refusal's: the one its rule compared, then, when all, the
// snapshot; else how many more the JSON and HTML forms hold.
func readings(rs []envelope.Reading, all bool) string {
	if len(rs) == 0 {
		return ""
	}
	n := 1
	if all {
		n = len(rs)
	}
	parts := make([]string, 0, n+1)
	for _, x := range rs[:n] {
		parts = append(parts, reading(x))
	}
	if left := len(rs) - n; left > 0 {
		parts = append(parts, fmt.Sprintf("+%d in the snapshot", left))
	}
	return strings.Join(parts, "; ")
}
