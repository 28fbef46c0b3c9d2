package modelrouter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/analysis"
	mr "hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// TestNegativeBudgetIsNothing: a negative Opts.TaskBudget or DailyBudget
// is no spend at all (not the default): the remote model is refused over
// budget, never asked; a free remote model may still be asked.
func TestNegativeBudgetIsNothing(t *testing.T) {
	for _, c := range []struct {
		name        string
		task, daily float64
		free        bool
		asked       bool
		reason      string
	}{
		{"task", -1, 0, false, false, "the task has"},
		{"day", 0, -1, false, false, "the day has"},
		{"free", -1, -1, true, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := modeltest.New()
			defer srv.Close()
			m := remoteModel("remote-best", 3, mr.T4, srv.Base())
			if c.free {
				m.CostIn, m.CostOut = 0, 0
			}
			r := newRouter(t, registry(m), mr.Opts{TaskBudget: c.task, DailyBudget: c.daily})
			d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 5, plant.SpectrumFaults{}),
				Material: analysis.MoS2, Hint: mr.HintBest})
			if err != nil {
				t.Fatal(err)
			}
			if asked := len(srv.Requests()) > 0; asked != c.asked {
				t.Fatalf("asked %v, want %v: %+v", asked, c.asked, d.Attempts)
			}
			if !c.asked {
				last := d.Attempts[len(d.Attempts)-1]
				if last.Model != "remote-best" || !strings.Contains(last.Error, "over budget") || !strings.Contains(last.Error, c.reason) {
					t.Fatalf("attempts %+v", d.Attempts)
				}
			}
		})
	}
}

// TestUnknownPolicyRefused: New refuses a policy it does not know rather
// than routing it as balance.
func TestUnknownPolicyRefused(t *testing.T) {
	if _, err := mr.New(mr.DefaultRegistry(), mr.Opts{Policy: "cheapest"}); !errors.Is(err, mr.ErrBadPolicy) {
		t.Fatalf("err %v, want ErrBadPolicy", err)
	}
	for _, p := range mr.Policies() {
		if _, err := mr.New(mr.DefaultRegistry(), mr.Opts{Policy: p}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
