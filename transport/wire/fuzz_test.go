package wire

import (
	"errors"
	"testing"
)

// FuzzDecode: Decode never panics, refuses only with a *DecodeError whose Kind
// maps to a sentinel, and whatever it accepts re-encodes and decodes to the
// same value (envelope and typed payload).
func FuzzDecode(f *testing.F) {
	for _, s := range specExamples {
		f.Add([]byte(s))
		f.Add([]byte(fixIDs(s)))
	}
	f.Add([]byte(extBody(TypeCapabilitiesRequest, "", `{"capability":"leak-check"}`)))
	f.Add([]byte(extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":0,"data":"AAEC","size_bytes":3,"checksum":"`+extChecksum+`","final":true}`)))
	f.Add([]byte(extBody(TypeCapabilitiesResponse, "", `{"callee_id":"e","caller_id":"a","capabilities":[{"capability":{"name":"x","version":"1","input_schema":{},"output_schema":{},"safety":{}},"safety_envelope":{"parameters":{}}}]}`)))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"payload":{"data":{"a":"\u2028<>&\ud800"}}}`))
	f.Add([]byte("{\"type\":\"event\",\"type\":\"event\"}"))
	f.Add([]byte(`{"hcp_version":"1.0","message_id":"550e8400-e29b-41d4-a716-446655440000","timestamp":"2025-01-15T08:30:00.000Z","session_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","type":"abort","payload":{"reason":"operator"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := Decode(body)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Kind.Sentinel() == nil || !errors.Is(err, de.Kind.Sentinel()) {
				t.Fatalf("refusal %T %v is not a proper *DecodeError", err, err)
			}
			_ = err.Error()
			return
		}
		roundTrip(t, env)
	})
}
