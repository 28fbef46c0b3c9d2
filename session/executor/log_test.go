package executor

import "testing"

// A 72 h run logs 8,640 rows at the default 30 s: the log (and so every
// checkpoint and the outputs) must stay bounded, span the whole run, and keep
// its rows in order.
func TestGrowthLogStaysBounded(t *testing.T) {
	var rows []LogRow
	const n = 8640
	for i := range n {
		rows = append(rows, LogRow{Elapsed: float64(i) * 30, Stage: "grow"})
		if len(rows) > MaxLogRows {
			rows = decimate(rows)
		}
		if len(rows) > MaxLogRows {
			t.Fatalf("after %d rows the log holds %d (> %d)", i+1, len(rows), MaxLogRows)
		}
	}
	if rows[0].Elapsed != 0 || rows[len(rows)-1].Elapsed != float64(n-1)*30 {
		t.Fatalf("log spans %v..%v s, want 0..%v", rows[0].Elapsed, rows[len(rows)-1].Elapsed, float64(n-1)*30)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].Elapsed <= rows[i-1].Elapsed {
			t.Fatalf("rows out of order at %d: %v after %v", i, rows[i].Elapsed, rows[i-1].Elapsed)
		}
	}
	if len(rows) < MaxLogRows/2 {
		t.Fatalf("decimation kept only %d rows", len(rows))
	}
}
