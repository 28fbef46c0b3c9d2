package gate

import (
	"errors"

	"hcp-edge/session/capability"
)

// checkOutput: the caller's expected_output compiles and asks for
// nothing the capability's declared output never holds (L4 has no
// rejection code of its own: invalid_input, the failing places as paths;
// docs/PROTOCOL-NOTES.md). A task refused here has run nothing: it would
// otherwise have run for hours and failed at the end.
func (g *Gate) checkOutput(a *admission) bool {
	eo := a.s.ExpectedOutput
	if eo == nil {
		return false
	}
	err := a.c.CheckExpectedOutput(eo.RequiredFields, eo.Schema)
	if err == nil {
		return false
	}
	a.rejectWith(ReasonInvalidInput, err, "expected_output cannot be met by %s %s: %v", a.c.Name, a.c.SemVer, err)
	var ee *capability.InputError
	if errors.As(err, &ee) {
		a.d.Rejection.Paths = ee.Paths()
	}
	return true
}
