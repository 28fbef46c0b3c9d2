package wire

import (
	"errors"
	"strings"
	"testing"
)

const (
	extSession  = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	extURI      = "hcp://" + extSession + "/artifacts/leak_check.svg"
	extChecksum = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// extBody is an envelope of type t around payload, with session sid ("" null).
func extBody(t Type, sid, payload string) string {
	s := "null"
	if sid != "" {
		s = `"` + sid + `"`
	}
	return `{"hcp_version":"1.0","message_id":"550e8400-e29b-41d4-a716-446655440000","timestamp":"2025-01-15T08:30:00.000Z",` +
		`"session_id":` + s + `,"type":"` + string(t) + `","payload":` + payload + `}`
}

func TestExtensionMessages(t *testing.T) {
	offer := `{"capability":{"name":"leak-check","version":"1.0.0","description":"d","input_schema":{"type":"object"},` +
		`"output_schema":{"type":"object"},"safety":{"risk_ceiling":"R2"},"constraints":null},` +
		`"safety_envelope":{"parameters":{"flow.H2":{"max":100,"unit":"sccm","hard_limit":true}},"prohibited_actions":[],` +
		`"emergency_procedures":{"estop":"safe_state"},"interlocks":{"heater":null},"digest":"` + extChecksum + `"}}`
	tests := []struct {
		name string
		body string
		want error
	}{
		{"capabilities_request", extBody(TypeCapabilitiesRequest, "", `{}`), nil},
		{"capabilities_request for one", extBody(TypeCapabilitiesRequest, "", `{"capability":"leak-check"}`), nil},
		{"capabilities_request with a session", extBody(TypeCapabilitiesRequest, extSession, `{}`), ErrSessionNotNull},
		{"capabilities_response", extBody(TypeCapabilitiesResponse, "", `{"callee_id":"hcp-edge","caller_id":"a","max_risk_level":"R3",`+
			`"max_data_classification":"T2","capabilities":[`+offer+`]}`), nil},
		{"capabilities_response, none", extBody(TypeCapabilitiesResponse, "", `{"callee_id":"hcp-edge","caller_id":"a","capabilities":[]}`), nil},
		{"capabilities_response without schemas", extBody(TypeCapabilitiesResponse, "", `{"callee_id":"hcp-edge","caller_id":"a",`+
			`"capabilities":[{"capability":{"name":"x","version":"1.0.0","safety":{}}}]}`), ErrMissingField},
		{"capabilities_response, bad caller", extBody(TypeCapabilitiesResponse, "", `{"callee_id":"hcp-edge","caller_id":"a.b"}`), ErrInvalidValue},
		{"artifact_request", extBody(TypeArtifactRequest, extSession, `{"uri":"`+extURI+`","offset":1024,"chunk_size":1024}`), nil},
		{"artifact_request without session", extBody(TypeArtifactRequest, "", `{"uri":"`+extURI+`"}`), ErrSessionRequired},
		{"artifact_request, bad uri", extBody(TypeArtifactRequest, extSession, `{"uri":"file:///etc/passwd"}`), ErrMalformed},
		{"artifact_request, traversal", extBody(TypeArtifactRequest, extSession, `{"uri":"hcp://x/artifacts/../y"}`), ErrPathTraversal},
		{"artifact_request, traversal out of the state dir", extBody(TypeArtifactRequest, extSession,
			`{"uri":"hcp://`+extSession+`/artifacts/../../etc/passwd"}`), ErrPathTraversal},
		{"artifact_request, traversal in the session", extBody(TypeArtifactRequest, extSession, `{"uri":"hcp://x/../artifacts/y"}`), ErrPathTraversal},
		{"artifact_request, backslash traversal", extBody(TypeArtifactRequest, extSession, `{"uri":"hcp://x/artifacts/..\\y"}`), ErrPathTraversal},
		{"artifact_request, dots in a name", extBody(TypeArtifactRequest, extSession, `{"uri":"hcp://x/artifacts/a..b"}`), nil},
		{"artifact_request, chunk too big", extBody(TypeArtifactRequest, extSession, `{"uri":"`+extURI+`","chunk_size":600000}`), ErrInvalidValue},
		{"artifact_request, negative offset", extBody(TypeArtifactRequest, extSession, `{"uri":"`+extURI+`","offset":-1}`), ErrInvalidValue},
		{"artifact_chunk", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":3,"data":"AAEC","size_bytes":6,`+
			`"checksum":"`+extChecksum+`","final":true}`), nil},
		{"artifact_chunk, empty artifact", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":0,"data":"","size_bytes":0,`+
			`"checksum":"`+extChecksum+`","final":true}`), nil},
		{"artifact_chunk past the end", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":5,"data":"AAEC","size_bytes":6,`+
			`"checksum":"`+extChecksum+`","final":true}`), ErrInvalidValue},
		{"artifact_chunk, final wrong", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":0,"data":"AAEC","size_bytes":6,`+
			`"checksum":"`+extChecksum+`","final":true}`), ErrInvalidValue},
		{"artifact_chunk, bad checksum", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":0,"data":"AAEC","size_bytes":3,`+
			`"checksum":"md5:00","final":true}`), ErrMalformed},
		{"artifact_chunk, data not base64", extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","data":"***","size_bytes":3,`+
			`"checksum":"`+extChecksum+`"}`), ErrSyntax},
		{"request_refused", extBody(TypeRequestRefused, "", `{"request_type":"artifact_request","reason_code":"forbidden","reason_message":"no"}`), nil},
		{"request_refused of a submit", extBody(TypeRequestRefused, "", `{"request_type":"task_submit","reason_code":"forbidden","reason_message":"no"}`),
			ErrInvalidValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(tc.body))
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, env)
		})
	}
}

func TestExtensionTypes(t *testing.T) {
	for _, ty := range []Type{TypeCapabilitiesRequest, TypeArtifactRequest} {
		if !ty.Valid() || !ty.IsCommand() || !ty.IsRequest() || ty.IsResponse() {
			t.Errorf("%s: valid %v command %v request %v response %v", ty, ty.Valid(), ty.IsCommand(), ty.IsRequest(), ty.IsResponse())
		}
	}
	for _, ty := range []Type{TypeCapabilitiesResponse, TypeArtifactChunk, TypeRequestRefused} {
		if !ty.Valid() || ty.IsCommand() || ty.IsRequest() || !ty.IsResponse() {
			t.Errorf("%s: valid %v command %v request %v response %v", ty, ty.Valid(), ty.IsCommand(), ty.IsRequest(), ty.IsResponse())
		}
	}
	env, err := Decode([]byte(extBody(TypeArtifactChunk, extSession, `{"uri":"`+extURI+`","offset":0,"data":"AAEC","size_bytes":3,`+
		`"checksum":"`+extChecksum+`","final":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	key, err := EventRoutingKey("harness-alpha-001", env)
	if err != nil || key != "harness-alpha-001."+extSession+".artifact_chunk" {
		t.Fatalf("routing key %q %v", key, err)
	}
	if c, err := env.ArtifactChunk(); err != nil || string(c.Data) != "\x00\x01\x02" {
		t.Fatalf("chunk %+v %v", c, err)
	}
	sid, name, err := ParseArtifactURI(extURI)
	if err != nil || sid != extSession || name != "leak_check.svg" {
		t.Fatalf("ParseArtifactURI = %q %q %v", sid, name, err)
	}
	if _, _, err := ParseArtifactURI("hcp://" + strings.Repeat("a", 600) + "/artifacts/x"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("long uri: %v", err)
	}
}

// TestArtifactURITraversal: a ".." segment is its own typed error naming
// the field, so a refusal can say what was wrong ("payload.uri: path
// traversal").
func TestArtifactURITraversal(t *testing.T) {
	_, err := Decode([]byte(extBody(TypeArtifactRequest, extSession, `{"uri":"hcp://`+extSession+`/artifacts/../../etc/passwd"}`)))
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "payload.uri" || de.Kind != KindTraversal || !errors.Is(err, ErrPathTraversal) {
		t.Fatalf("decode: %#v", err)
	}
	if !strings.Contains(err.Error(), "payload.uri: path traversal") {
		t.Fatalf("message %q does not name the field and the fault", err)
	}
	if _, _, err := ParseArtifactURI("hcp://s/artifacts/.."); !errors.Is(err, ErrPathTraversal) {
		t.Fatalf("ParseArtifactURI(..): %v", err)
	}
}
