package wire

import (
	"errors"
	"testing"
)

func TestSafetyEnvelopeValidate(t *testing.T) {
	one, two := 1.0, 2.0
	tests := []struct {
		name string
		s    *SafetyEnvelope
		want error
	}{
		{"nil", nil, nil},
		{"empty (L3's example)", &SafetyEnvelope{}, nil},
		{"ok", &SafetyEnvelope{Parameters: map[string]EnvelopeParameter{"t": {Max: &two, Unit: "celsius", HardLimit: true}},
			ProhibitedActions: []string{"venting_while_hot"}, EmergencyProcedures: map[string]string{"estop": "safe_state"},
			Interlocks: []byte(`{"heater":null}`)}, nil},
		{"no unit", &SafetyEnvelope{Parameters: map[string]EnvelopeParameter{"t": {Max: &two}}}, ErrMissingField},
		{"no bound", &SafetyEnvelope{Parameters: map[string]EnvelopeParameter{"t": {Unit: "x"}}}, ErrMissingField},
		{"min above max", &SafetyEnvelope{Parameters: map[string]EnvelopeParameter{"t": {Min: &two, Max: &one, Unit: "x"}}}, ErrInvalidValue},
		{"bad action", &SafetyEnvelope{ProhibitedActions: []string{"Not An Id"}}, ErrInvalidValue},
		{"bad procedure", &SafetyEnvelope{EmergencyProcedures: map[string]string{"estop": ""}}, ErrMissingField},
		{"interlocks not an object", &SafetyEnvelope{Interlocks: []byte(`[1]`)}, ErrWrongType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate("payload.safety_envelope")
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}
