package recipe

import (
	"errors"
	"testing"
)

// TestShippedQuestions: the shipped MoS2 recipe asks, before pump-down,
// which precursor is loaded and whether the substrate is in, only when the
// task asks for the technician's checks; an answer given through
// precursor_loaded is taken as given.
func TestShippedQuestions(t *testing.T) {
	r := shipped(t, "mos2-sulfurization.yaml")
	base := `{"target_material":"MoS2","substrate":"SiO2/Si"`
	qs := func(t *testing.T, inputs string) []Question {
		t.Helper()
		p, err := r.Resolve([]byte(inputs))
		if err != nil {
			t.Fatal(err)
		}
		var out []Question
		for _, ph := range p.Phases {
			if len(ph.Questions) > 0 && ph.Kind != KindPumpDown {
				t.Fatalf("asked before %s, want before pump_down", ph.Kind)
			}
			out = append(out, ph.Questions...)
		}
		return out
	}
	if got := qs(t, base+`}`); len(got) != 0 {
		t.Fatalf("the default task is asked %d questions", len(got))
	}
	got := qs(t, base+`,"technician_checks":"ask"}`)
	if len(got) != 2 || got[0].Name != "precursor_loaded" || got[0].Expect != "MoO3" || got[0].Given != nil ||
		got[1].Answer.Type != AnswerYesNo || got[1].Expect != true || got[0].Timeout <= 0 {
		t.Fatalf("questions %+v", got)
	}
	got = qs(t, base+`,"technician_checks":"ask","precursor_loaded":"WO3"}`)
	if got[0].Given != "WO3" || got[1].Given != nil {
		t.Fatalf("given in advance: %+v", got)
	}
	if _, err := r.Resolve([]byte(base + `,"precursor_loaded":"ZrO2"}`)); err == nil {
		t.Fatal("a precursor outside the choices accepted in advance")
	}
}

func TestAnswerParse(t *testing.T) {
	lo, hi := 0.5, 5.0
	num := AnswerSpec{Type: AnswerNumber, Unit: "mm", Min: &lo, Max: &hi}
	yn := AnswerSpec{Type: AnswerYesNo}
	ch := AnswerSpec{Type: AnswerChoice, Choices: []string{"MoO3", "WO3"}}
	for _, c := range []struct {
		a    AnswerSpec
		in   string
		want any
	}{
		{num, "2.5", 2.5}, {num, " 5 ", 5.0}, {num, "0.5", 0.5},
		{yn, "yes", true}, {yn, "N", false}, {yn, "true", true},
		{ch, "WO3", "WO3"},
	} {
		got, err := c.a.Parse("q", c.in)
		if err != nil || got != c.want {
			t.Errorf("%s %q: %v %v, want %v", c.a.Type, c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		a  AnswerSpec
		in string
	}{
		{num, "7"}, {num, "0.4"}, {num, "two"}, {num, "NaN"}, {num, "Inf"}, {num, ""},
		{yn, "maybe"}, {yn, ""}, {ch, "wo3"}, {ch, "ZrO2"}, {ch, ""},
	} {
		_, err := c.a.Parse("q", c.in)
		var ae *AnswerError
		if !errors.Is(err, ErrAnswer) || !errors.As(err, &ae) || ae.Question != "q" {
			t.Errorf("%s %q: %v, want an AnswerError", c.a.Type, c.in, err)
		}
	}
	if num.Text(2.5) != "2.5" || yn.Text(true) != "yes" || ch.Text("WO3") != "WO3" {
		t.Error("Text")
	}
}

// TestQuestionOnAnAnswer: a question conditional on an earlier answer
// keeps its condition, typed as that answer, for the run to decide.
func TestQuestionOnAnAnswer(t *testing.T) {
	src := `name: asks
version: 1.0.0
description: asks twice
phases:
  - preflight: {}
  - pump_down:
      base_pressure_pa: 5
      timeout: PT30M
      ask:
        - name: foil_loaded
          question: Foil in the boat?
          answer: {type: yes_no}
          timeout: PT30M
        - name: foil_thickness_um
          question: Thickness of the foil?
          answer: {type: number, unit: um, min: 5, max: 100}
          timeout: PT10M
          when: {answer: foil_loaded, equals: "yes"}
cleanup: {purge: PT5M}
`
	r, err := Load("asks.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	qs := p.Phases[1].Questions
	if len(qs) != 2 || qs[0].When != nil || qs[1].When == nil || qs[1].When.Answer != "foil_loaded" || qs[1].When.Equals != true {
		t.Fatalf("questions %+v", qs)
	}
	// Both timeouts bound the phase.
	if p.Phases[1].Bound < 40*60*1e9 {
		t.Fatalf("bound %v", p.Phases[1].Bound)
	}
}
