package recipe

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// problemsOf loads and checks one recipe against the sim envelope.
func problemsOf(t *testing.T, name string, data []byte) []Problem {
	t.Helper()
	r, err := LoadFor(name, data, Hazards(simEnvelope(t)))
	if err != nil {
		var ps Problems
		if !errors.As(err, &ps) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("Load error %T %v is not Problems", err, err)
		}
		return ps
	}
	return Check(r, simEnvelope(t))
}

// TestBrokenRecipes: every recipe of testdata/broken is refused, each for
// its own rule, at the right line and key, with a telling message; and no
// file breaks another rule besides.
func TestBrokenRecipes(t *testing.T) {
	cases := []struct {
		file, rule string
		line       int
		key, msg   string
	}{
		{"malformed.yaml", RuleSyntax, 6, "", "did not find expected ',' or '}'"},
		{"unknown-phase.yaml", RuleUnknownPhase, 7, "phases[2]", `unknown phase "anneal"`},
		{"unknown-key.yaml", RuleUnknownKey, 8, "phases[3].ramp.settle_band", "unknown key (known here: ask, description, name, rate_c_per_min, settle_band_c"},
		{"setpoint-out-of-envelope.yaml", "envelope.max", 11, "phases[3].ramp.temperature_c", "1100 celsius, limit 1000 celsius: above the hard maximum (at the extreme growth_temperature = 1100 celsius)"},
		{"undeclared-input.yaml", RuleUndeclaredInput, 11, "phases[3].ramp.temperature_c", "{input: growth_temp}: no such input is declared"},
		{"unit-mismatch.yaml", RuleUnit, 10, "phases[3].ramp.temperature_c", `is in "kelvin"; this parameter is in celsius`},
		{"unbounded-hold.yaml", RuleUnbounded, 8, "phases[3].hold.duration", "every hold and wait needs a finite bound"},
		{"vent-while-hot.yaml", RuleVentHot, 10, "phases[5].vent", "heated by ramp at line 8 and not cooled since"},
		{"reactive-open-at-vent.yaml", RuleGasOpen, 13, "phases[4].vent", "venting with H2S (opened by expose at line 8) open"},
		{"not-purged.yaml", RuleNotPurged, 11, "phases[6].vent", "H2S used and not purged out since"},
		{"no-cleanup.yaml", RuleNoCleanup, 1, "cleanup", "every recipe needs a cleanup"},
		{"unknown-gas-line.yaml", RuleRig, 7, "phases[2].purge.gas", "this rig has no N2 gas line"},
		{"bad-semver.yaml", RuleVersion, 2, "version", `"1.0" is not a semantic version`},
		{"h2s-above-pressure-rule.yaml", "envelope.gas_requires_low_pressure", 13, "phases[3].hold.flows.H2S", "20 mbar, limit 10 mbar: H2S needs the chamber at or below the limit (at the extreme base_pressure = 2000 Pa)"},
		{"reactive-purge.yaml", RuleReactivePurge, 7, "phases[2].purge.gas", "H2 is a reactive gas of this rig"},
		{"flow-rate-of-change.yaml", "envelope.max_rate_of_change", 9, "phases[4].hold.flows.H2S", "limit 60 sccm/min"},
		{"leak-check-without-pump-down.yaml", RuleOrder, 6, "phases[1].leak_check", "needs the chamber pumped down"},
		{"analyse-without-measure.yaml", RuleOrder, 6, "phases[1].analyse", "analyse needs a measure phase before it"},
		{"question-without-timeout.yaml", RuleUnbounded, 12, "phases[3].ramp.ask[0].timeout", "a question needs a timeout"},
		{"question-bad-expect.yaml", RuleQuestion, 15, "phases[3].ramp.ask[0].expect", `expect the string "WO3": not an answer this question takes (one of MoO3, none)`},
		{"question-input-mismatch.yaml", RuleQuestion, 20, "phases[3].ramp.ask[0].input", "its value WO3 is not one of the choices MoO3, none"},
		{"question-answer-not-asked-before.yaml", RuleQuestion, 14, "phases[1].pump_down.ask[0].when.answer", `no question "foil_loaded" is asked before this one`},
		{"question-while-reactive.yaml", RuleQuestion, 18, "phases[4].hold.ask[0]", "asked while H2S (opened by expose at line 8) still flows"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			name := filepath.Join("testdata", "broken", tc.file)
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			seen[tc.file] = true
			ps := problemsOf(t, name, data)
			if len(ps) == 0 {
				t.Fatal("accepted")
			}
			found := false
			for _, p := range ps {
				if p.Rule != tc.rule {
					t.Errorf("also broken for another rule: %s [%s]", p, p.Rule)
				}
				if p.File == name && p.Line == tc.line && p.Key == tc.key && strings.Contains(p.Message, tc.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s:%d: %s: …%s… [%s]; got:\n%v", name, tc.line, tc.key, tc.msg, tc.rule, Problems(ps))
			}
		})
	}
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case", f)
		}
	}
}

// TestTooLarge: a file over 1 MiB is refused unread.
func TestTooLarge(t *testing.T) {
	data := append([]byte("name: big\nversion: 1.0.0\ndescription: big\n# "), bytes.Repeat([]byte("x"), MaxSize)...)
	_, err := Load("big.yaml", data)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if !strings.HasPrefix(err.Error(), "big.yaml: ") || !strings.Contains(err.Error(), "at most 1048576") {
		t.Errorf("message %q", err)
	}
}
