package recipe

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// AnswerType is the type of a question's answer.
type AnswerType string

// Answer types.
const (
	AnswerYesNo  AnswerType = "yes_no" // yes or no (a bool)
	AnswerNumber AnswerType = "number" // a number with a unit, from min to max
	AnswerChoice AnswerType = "choice" // one of a list of words
)

// OnTimeoutAbort is the only on_timeout a question takes (and its
// default): the session fails, its cleanup drives the rig safe.
const OnTimeoutAbort = "abort"

// RuleQuestion is the rule of a bad question or a bad use of its answer.
const RuleQuestion = "question"

// ErrAnswer is matched by every refused answer (an *AnswerError).
var ErrAnswer = errors.New("recipe: answer refused")

// AnswerError is an answer of the wrong type or out of range.
type AnswerError struct {
	Question string // the question's name
	Value    string // the answer as given
	Reason   string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("answer %q to question %s: %s", e.Value, e.Question, e.Reason)
}

// Is matches ErrAnswer.
func (e *AnswerError) Is(target error) bool { return target == ErrAnswer }

// AnswerSpec is the typed answer a question takes.
type AnswerSpec struct {
	Type    AnswerType `json:"type"`
	Unit    string     `json:"unit,omitempty"`    // number
	Min     *float64   `json:"min,omitempty"`     // number
	Max     *float64   `json:"max,omitempty"`     // number
	Choices []string   `json:"choices,omitempty"` // choice
}

// String says what answer is wanted: "yes or no", "a number in mm from 0
// to 5", "one of MoO3, WO3, none".
func (a AnswerSpec) String() string {
	switch a.Type {
	case AnswerYesNo:
		return "yes or no"
	case AnswerNumber:
		return fmt.Sprintf("a number in %s from %s to %s", a.Unit, fmtNum(*a.Min), fmtNum(*a.Max))
	case AnswerChoice:
		return "one of " + strings.Join(a.Choices, ", ")
	}
	return string(a.Type)
}

// Parse reads a typed answer from its text (what an operator types):
// yes/no (true, false, y, n) for yes_no, a finite number within min .. max
// for number, one of the choices (exactly) for choice. The value is a
// bool, a float64 or a string; a refusal is an *AnswerError.
func (a AnswerSpec) Parse(question, s string) (any, error) {
	bad := func(format string, args ...any) error {
		return &AnswerError{Question: question, Value: s, Reason: fmt.Sprintf(format, args...)}
	}
	t := strings.TrimSpace(s)
	switch a.Type {
	case AnswerYesNo:
		switch strings.ToLower(t) {
		case "yes", "y", "true":
			return true, nil
		case "no", "n", "false":
			return false, nil
		}
		return nil, bad("want yes or no")
	case AnswerNumber:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, bad("want a number (%s)", a.Unit)
		}
		return a.Check(question, f)
	case AnswerChoice:
		return a.Check(question, t)
	}
	return nil, bad("unknown answer type %q", a.Type)
}

// Check checks a typed value (bool, float64 or string, as JSON decodes
// them; a json.Number-free value) against the answer's type and range.
func (a AnswerSpec) Check(question string, v any) (any, error) {
	bad := func(format string, args ...any) error {
		return &AnswerError{Question: question, Value: fmt.Sprint(v), Reason: fmt.Sprintf(format, args...)}
	}
	switch a.Type {
	case AnswerYesNo:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return a.Parse(question, x)
		}
		return nil, bad("want yes or no")
	case AnswerNumber:
		f, ok := v.(float64)
		if !ok {
			if n, isInt := v.(int); isInt {
				f, ok = float64(n), true
			}
		}
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, bad("want a number (%s)", a.Unit)
		}
		if f < *a.Min || f > *a.Max {
			return nil, bad("out of range: want %s", a)
		}
		return f, nil
	case AnswerChoice:
		s, ok := v.(string)
		if !ok || !slices.Contains(a.Choices, s) {
			return nil, bad("want %s", a)
		}
		return s, nil
	}
	return nil, bad("unknown answer type %q", a.Type)
}

// Text writes a typed answer as the operator would type it.
func (a AnswerSpec) Text(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return fmtNum(x)
	}
	return fmt.Sprint(v)
}

// Condition makes a question conditional: on a declared enum input (it is
// asked only when the task's input Input equals Equals, decided when the
// task is resolved) or on the answer to a question asked before it
// (Answer: decided when it comes, from that answer; a question its own
// condition left unasked has no answer, and so no match).
type Condition struct {
	Input  string `json:"input,omitempty"`
	Answer string `json:"answer,omitempty"`
	Equals any    `json:"equals"`
}

// QuestionSpec is one question of a phase as written: asked before the
// phase runs, its answer typed, its timeout required.
type QuestionSpec struct {
	Name      string // the answer's name: in the result's answers and in error messages
	Text      string // what is asked
	Answer    AnswerSpec
	Timeout   time.Duration
	OnTimeout string // abort
	// Expect, when set, is the one answer the run goes on with (a bool,
	// float64 or string of the answer's type): any other aborts the
	// session to a safe state before the phase runs.
	Expect any
	// Input, when set, is a declared input through which a caller may
	// answer the question in advance (the question is then not asked).
	Input string
	// When, when set, asks the question only for the tasks it matches.
	When   *Condition
	Line   int
	Column int
	Key    string
}

// Question is a resolved question of a Plan's phase.
type Question struct {
	Name      string        `json:"name"`
	Text      string        `json:"question"`
	Answer    AnswerSpec    `json:"answer"`
	Timeout   time.Duration `json:"timeout_ns"`
	OnTimeout string        `json:"on_timeout"`
	Expect    any           `json:"expect,omitempty"`
	// Given is the answer the task gave in advance through the question's
	// input (nil: it is asked).
	Given any `json:"given,omitempty"`
	// When, when set, is a condition on an earlier answer: the question is
	// asked only when that answer equals When.Equals.
	When *Condition `json:"when,omitempty"`
}

var questionKeys = []string{"name", "question", "answer", "timeout", "on_timeout", "expect", "input", "when"}

var questionNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`) })

// questions decodes a phase's ask: list.
func (d *decoder) questions(r *Recipe, p *PhaseSpec, e entry) {
	list := deref(e.v)
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		d.add(e.k, e.key, RuleType, "want a non-empty list of questions, got %s", kindName(list))
		return
	}
	for i, item := range list.Content {
		key := fmt.Sprintf("%s[%d]", e.key, i)
		q := &QuestionSpec{OnTimeout: OnTimeoutAbort, Line: deref(item).Line, Column: deref(item).Column, Key: key}
		got := map[string]entry{}
		for _, f := range d.mapping(item, key, questionKeys) {
			got[f.k.Value] = f
		}
		n0 := len(d.probs)
		qbad := func(n *yaml.Node, k, format string, args ...any) { d.add(n, k, RuleQuestion, format, args...) }
		if f, ok := got["name"]; ok {
			if s, ok := d.str(f); ok && !questionNameRE().MatchString(s) {
				qbad(f.k, f.key, "%q: want lower-case letters, digits and underscores", s)
			} else {
				q.Name = s
			}
		} else {
			d.add(item, key+".name", RuleMissing, "missing: the answer's name (e.g. precursor_loaded)")
		}
		if f, ok := got["question"]; ok {
			q.Text, _ = d.str(f)
		} else {
			d.add(item, key+".question", RuleMissing, "missing: what the technician is asked")
		}
		if f, ok := got["timeout"]; ok {
			if dv, ok := d.dur(f); ok {
				if dv <= 0 {
					qbad(f.k, f.key, "must be positive")
				}
				q.Timeout = dv
			}
		} else {
			d.add(item, key+".timeout", RuleUnbounded, "missing: a question needs a timeout (e.g. PT30M): the rig holds while it waits, and an unanswered question aborts the session to a safe state")
		}
		if f, ok := got["on_timeout"]; ok {
			if s, ok := d.str(f); ok && s != OnTimeoutAbort {
				qbad(f.k, f.key, "%q: the only action on timeout is abort (the session fails; its cleanup drives the rig safe)", s)
			}
		}
		if f, ok := got["answer"]; ok {
			d.answerSpec(q, f)
		} else {
			d.add(item, key+".answer", RuleMissing, "missing: the answer's type ({type: yes_no}, {type: number, unit, min, max} or {type: choice, choices: [...]})")
		}
		answerOK := len(d.probs) == n0
		if f, ok := got["expect"]; ok && answerOK {
			v, err := q.Answer.Check(q.Name, scalarOf(f.v))
			if err != nil {
				qbad(f.k, f.key, "expect %s: not an answer this question takes (%s)", kindName(f.v), q.Answer)
			}
			q.Expect = v
		}
		if f, ok := got["input"]; ok {
			if s, ok := d.str(f); ok {
				q.Input = s
				in, declared := r.byName[s]
				switch {
				case !declared:
					d.add(f.k, f.key, RuleUndeclaredInput, "input %q is not declared under inputs", s)
				case answerOK:
					if why := q.Answer.accepts(in); why != "" {
						qbad(f.k, f.key, "input %s cannot answer this question: %s", s, why)
					}
				}
			}
		}
		if f, ok := got["when"]; ok {
			d.condition(r, p, q, f)
		}
		for _, o := range p.Ask {
			if o.Name == q.Name && q.Name != "" {
				qbad(deref(item), key+".name", "question %s asked twice in this phase", q.Name)
			}
		}
		p.Ask = append(p.Ask, q)
	}
}

// scalarOf is a YAML scalar as the answer types take it: a bool, a float64
// or a string.
func scalarOf(n *yaml.Node) any {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if f, ok := number(n); ok {
		return f
	}
	if n.ShortTag() == "!!bool" {
		var b bool
		_ = n.Decode(&b)
		return b
	}
	return n.Value
}

func (d *decoder) answerSpec(q *QuestionSpec, e entry) {
	got := map[string]entry{}
	for _, f := range d.mapping(e.v, e.key, []string{"type", "unit", "min", "max", "choices"}) {
		got[f.k.Value] = f
	}
	te, ok := got["type"]
	if !ok {
		d.add(e.k, e.key+".type", RuleMissing, "missing (yes_no, number or choice)")
		return
	}
	t, ok := d.str(te)
	if !ok {
		return
	}
	a := AnswerSpec{Type: AnswerType(t)}
	only := func(allowed ...string) {
		for k, f := range got {
			if k != "type" && !slices.Contains(allowed, k) {
				d.add(f.k, f.key, RuleQuestion, "a %s answer takes no %s", t, k)
			}
		}
	}
	switch a.Type {
	case AnswerYesNo:
		only()
	case AnswerNumber:
		only("unit", "min", "max")
		for _, k := range []string{"unit", "min", "max"} {
			if _, ok := got[k]; !ok {
				d.add(e.k, e.key+"."+k, RuleMissing, "missing: a number answer states its unit, min and max")
			}
		}
		if f, ok := got["unit"]; ok {
			a.Unit, _ = d.str(f)
		}
		if f, ok := got["min"]; ok {
			if v, ok := d.num(f); ok {
				a.Min = &v
			}
		}
		if f, ok := got["max"]; ok {
			if v, ok := d.num(f); ok {
				a.Max = &v
			}
		}
		if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
			d.add(e.k, e.key, RuleQuestion, "min above max")
		}
	case AnswerChoice:
		only("choices")
		f, ok := got["choices"]
		if !ok {
			d.add(e.k, e.key+".choices", RuleMissing, "missing: a choice answer lists its choices")
			break
		}
		vs := deref(f.v)
		if vs.Kind != yaml.SequenceNode || len(vs.Content) < 2 {
			d.add(f.k, f.key, RuleQuestion, "want a list of at least two words")
			break
		}
		for _, it := range vs.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || it.ShortTag() != "!!str" || strings.TrimSpace(it.Value) == "" || strings.ContainsAny(it.Value, " \t\n") {
				d.add(it, f.key, RuleQuestion, "choice %s: want a word without spaces (what the operator types)", kindName(it))
				continue
			}
			if slices.Contains(a.Choices, it.Value) {
				d.add(it, f.key, RuleQuestion, "choice %s listed twice", it.Value)
				continue
			}
			a.Choices = append(a.Choices, it.Value)
		}
	default:
		d.add(te.k, te.key, RuleQuestion, "unknown answer type %q (known: yes_no, number, choice)", t)
		return
	}
	q.Answer = a
}

// accepts says why a declared input cannot carry an answer of a ("" when
// it can): every value the input takes must be an answer a takes.
func (a AnswerSpec) accepts(in *Input) string {
	switch a.Type {
	case AnswerYesNo:
		if in.Type != TypeEnum {
			return fmt.Sprintf("it is a %s input; a yes_no answer comes through an enum input of yes and no", in.Type)
		}
		for _, v := range in.Values {
			if s, ok := v.(string); !ok || (s != "yes" && s != "no") {
				return fmt.Sprintf("its value %v is not yes or no", v)
			}
		}
	case AnswerNumber:
		if in.Type != TypeNumber && in.Type != TypeInteger {
			return fmt.Sprintf("it is a %s input; a number answer comes through a number input", in.Type)
		}
		if !strings.EqualFold(in.Unit, a.Unit) {
			return fmt.Sprintf("its unit %q is not the answer's %q", in.Unit, a.Unit)
		}
		if in.Min == nil || in.Max == nil || *in.Min < *a.Min || *in.Max > *a.Max {
			return fmt.Sprintf("its range must lie within the answer's %s .. %s", fmtNum(*a.Min), fmtNum(*a.Max))
		}
	case AnswerChoice:
		if in.Type != TypeEnum {
			return fmt.Sprintf("it is a %s input; a choice answer comes through an enum input", in.Type)
		}
		for _, v := range in.Values {
			if s, ok := v.(string); !ok || !slices.Contains(a.Choices, s) {
				return fmt.Sprintf("its value %v is not one of the choices %s", v, strings.Join(a.Choices, ", "))
			}
		}
	}
	return ""
}

func (d *decoder) condition(r *Recipe, p *PhaseSpec, q *QuestionSpec, e entry) {
	c := &Condition{}
	got := map[string]entry{}
	for _, f := range d.mapping(e.v, e.key, []string{"input", "answer", "equals"}) {
		got[f.k.Value] = f
	}
	fi, isInput := got["input"]
	fa, isAnswer := got["answer"]
	fe, ok := got["equals"]
	if !ok || isInput == isAnswer {
		d.add(e.k, e.key, RuleMissing, "want {input: NAME, equals: VALUE} (NAME a declared enum input) or {answer: NAME, equals: VALUE} (NAME a question asked before this one)")
		return
	}
	c.Equals = scalarOf(fe.v)
	if isInput {
		c.Input, _ = d.str(fi)
		in, declared := r.byName[c.Input]
		switch {
		case !declared:
			d.add(fi.k, fi.key, RuleUndeclaredInput, "input %q is not declared under inputs", c.Input)
		case in.Type != TypeEnum:
			d.add(fi.k, fi.key, RuleQuestion, "input %s is a %s input: a condition tests an enum input", c.Input, in.Type)
		case !slices.Contains(in.Values, c.Equals):
			d.add(fe.k, fe.key, RuleQuestion, "%v is not one of input %s's values", c.Equals, c.Input)
		}
		q.When = c
		return
	}
	c.Answer, _ = d.str(fa)
	var earlier *QuestionSpec
	for _, ph := range append(slices.Clone(r.Phases), p) {
		for _, o := range ph.Ask {
			if o.Name == c.Answer && o.Name != "" {
				earlier = o
			}
		}
	}
	if earlier == nil {
		d.add(fa.k, fa.key, RuleQuestion, "no question %q is asked before this one (an answer is used after it is given)", c.Answer)
		return
	}
	v, err := earlier.Answer.Check(earlier.Name, c.Equals)
	if err != nil {
		d.add(fe.k, fe.key, RuleQuestion, "%s: not an answer question %s takes (%s)", kindName(fe.v), earlier.Name, earlier.Answer)
		return
	}
	c.Equals = v
	q.When = c
}

// resolveQuestions resolves a phase's questions against the task's values:
// the ones its condition leaves out are dropped, an answer given through an
// input is kept in Given.
func (s *PhaseSpec) resolveQuestions(v values) []Question {
	var out []Question
	for _, q := range s.Ask {
		if q.When != nil && q.When.Input != "" && v[q.When.Input] != q.When.Equals {
			continue
		}
		rq := Question{Name: q.Name, Text: q.Text, Answer: q.Answer, Timeout: q.Timeout, OnTimeout: q.OnTimeout, Expect: q.Expect}
		if q.When != nil && q.When.Answer != "" {
			rq.When = q.When
		}
		if q.Input != "" {
			if given, ok := v[q.Input]; ok {
				if g, err := q.Answer.Check(q.Name, given); err == nil {
					rq.Given = g
				}
			}
		}
		out = append(out, rq)
	}
	return out
}
