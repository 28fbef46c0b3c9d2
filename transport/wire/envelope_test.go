package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestDecodeSpecExamples(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error // nil: accepted
	}{
		{"L1 envelope with empty task_submit payload", specL1Envelope, ErrMissingField},
		{"L4 task_submit raw (placeholder ids)", specL4TaskSubmit, ErrMalformed},
		{"L4 task_submit", fixIDs(specL4TaskSubmit), nil},
		{"L4 simple task_submit raw (msg-001)", specL4SimpleSubmit, ErrMalformed},
		{"L4 simple task_submit", fixIDs(specL4SimpleSubmit), nil},
		{"L2 event", fixIDs(specL2Event), nil},
		{"L3 task_accepted", fixIDs(specL3Accepted), nil},
		{"L3 task_rejected (null session)", fixIDs(specL3Rejected), nil},
		{"L4 task_completed", fixIDs(specL4Completed), nil},
		{"L4 task_failed", fixIDs(specL4Failed), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(tc.body))
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("err %T is not a *DecodeError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := env.DecodePayload()
			if err != nil {
				t.Fatal(err)
			}
			if p.MessageType() != env.Type {
				t.Fatalf("payload type %s, envelope %s", p.MessageType(), env.Type)
			}
			roundTrip(t, env)
		})
	}
}

func TestDecodeTaskSubmitFields(t *testing.T) {
	env, err := Decode([]byte(fixIDs(specL4TaskSubmit)))
	if err != nil {
		t.Fatal(err)
	}
	if env.SessionID != nil || env.Type != TypeTaskSubmit || env.HCPVersion != "1.0" {
		t.Fatalf("envelope %+v", env)
	}
	if want := time.Date(2025, 1, 15, 8, 30, 0, 0, time.UTC); !env.Timestamp.Equal(want) {
		t.Fatalf("timestamp %v", env.Timestamp)
	}
	ts, err := env.TaskSubmit()
	if err != nil {
		t.Fatal(err)
	}
	if ts.Capability != "cvd-material-synthesis" || ts.CallerID != "harness-alpha-001" || ts.CapabilityVersion != "1.x" {
		t.Fatalf("payload %+v", ts)
	}
	if ts.Constraints == nil || ts.Constraints.MaxDuration != "PT72H" || *ts.Constraints.ConfidenceThreshold != 0.95 || ts.Constraints.DataClassification != "T2" {
		t.Fatalf("constraints %+v", ts.Constraints)
	}
	if ts.ExpectedOutput == nil || len(ts.ExpectedOutput.RequiredFields) != 3 || !json.Valid(ts.ExpectedOutput.Schema) {
		t.Fatalf("expected_output %+v", ts.ExpectedOutput)
	}
	if _, err := env.Event(); err == nil {
		t.Fatal("Event() on a task_submit succeeded")
	}
}

// mutate decodes the valid L2 event into a map, applies f and re-marshals.
func mutate(t *testing.T, base string, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(fixIDs(base)), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func payloadOf(m map[string]any) map[string]any { return m["payload"].(map[string]any) }

func TestDecodeRefusals(t *testing.T) {
	small, _ := NewDecoder(Opts{MaxBodySize: 100})
	tests := []struct {
		name  string
		body  string
		dec   *Decoder
		want  error
		field string
	}{
		{"empty body", ``, nil, ErrSyntax, ""},
		{"not an object", `[1,2]`, nil, ErrWrongType, ""},
		{"bare string", `"x"`, nil, ErrWrongType, ""},
		{"truncated", `{"hcp_version":"1.0"`, nil, ErrSyntax, ""},
		{"trailing data", fixIDs(specL2Event) + `{}`, nil, ErrSyntax, ""},
		{"invalid UTF-8", "{\"hcp_version\":\"1.0\xff\"}", nil, ErrEncoding, ""},
		{"too large", fixIDs(specL2Event), small, ErrTooLarge, ""},
		{"duplicate key", `{"type":"event","type":"task_submit"}`, nil, ErrDuplicateField, "type"},
		{"unknown type", mutate(t, specL2Event, func(m map[string]any) { m["type"] = "task_resume" }), nil, ErrUnknownType, "type"},
		{"type not a string", mutate(t, specL2Event, func(m map[string]any) { m["type"] = 7 }), nil, ErrWrongType, "type"},
		{"version major 2", mutate(t, specL2Event, func(m map[string]any) { m["hcp_version"] = "2.0" }), nil, ErrVersion, "hcp_version"},
		{"version minor 7 accepted? no: malformed", mutate(t, specL2Event, func(m map[string]any) { m["hcp_version"] = "1" }), nil, ErrMalformed, "hcp_version"},
		{"version v1.0", mutate(t, specL2Event, func(m map[string]any) { m["hcp_version"] = "v1.0" }), nil, ErrMalformed, "hcp_version"},
		{"missing hcp_version", mutate(t, specL2Event, func(m map[string]any) { delete(m, "hcp_version") }), nil, ErrMissingField, "hcp_version"},
		{"missing message_id", mutate(t, specL2Event, func(m map[string]any) { delete(m, "message_id") }), nil, ErrMissingField, "message_id"},
		{"message_id not uuid", mutate(t, specL2Event, func(m map[string]any) { m["message_id"] = "msg-001" }), nil, ErrMalformed, "message_id"},
		{"message_id urn form", mutate(t, specL2Event, func(m map[string]any) { m["message_id"] = "urn:uuid:" + testMsgID }), nil, ErrMalformed, "message_id"},
		{"message_id no hyphens", mutate(t, specL2Event, func(m map[string]any) { m["message_id"] = strings.ReplaceAll(testMsgID, "-", "") }), nil, ErrMalformed, "message_id"},
		{"message_id version 1", mutate(t, specL2Event, func(m map[string]any) { m["message_id"] = "6ba7b810-9dad-11d1-80b4-00c04fd430c8" }), nil, ErrInvalidValue, "message_id"},
		{"missing timestamp", mutate(t, specL2Event, func(m map[string]any) { delete(m, "timestamp") }), nil, ErrMissingField, "timestamp"},
		{"timestamp no zone", mutate(t, specL2Event, func(m map[string]any) { m["timestamp"] = "2025-01-15T08:30:00.000" }), nil, ErrMalformed, "timestamp"},
		{"timestamp date only", mutate(t, specL2Event, func(m map[string]any) { m["timestamp"] = "2025-01-15" }), nil, ErrMalformed, "timestamp"},
		{"timestamp offset +02:00", mutate(t, specL2Event, func(m map[string]any) { m["timestamp"] = "2025-01-15T08:30:00.000+02:00" }), nil, ErrInvalidValue, "timestamp"},
		{"timestamp month 13", mutate(t, specL2Event, func(m map[string]any) { m["timestamp"] = "2025-13-15T08:30:00.000Z" }), nil, ErrMalformed, "timestamp"},
		{"timestamp number", mutate(t, specL2Event, func(m map[string]any) { m["timestamp"] = 1736929800 }), nil, ErrWrongType, "timestamp"},
		{"session_id on task_submit", mutate(t, specL4TaskSubmit, func(m map[string]any) { m["session_id"] = testSessionID }), nil, ErrSessionNotNull, "session_id"},
		{"session_id null on event", mutate(t, specL2Event, func(m map[string]any) { m["session_id"] = nil }), nil, ErrSessionRequired, "session_id"},
		{"session_id absent on event", mutate(t, specL2Event, func(m map[string]any) { delete(m, "session_id") }), nil, ErrSessionRequired, "session_id"},
		{"session_id null on task_accepted", mutate(t, specL3Accepted, func(m map[string]any) { m["session_id"] = nil }), nil, ErrSessionRequired, "session_id"},
		{"session_id null on abort", `{"hcp_version":"1.0","message_id":"` + testMsgID + `","timestamp":"2025-01-15T08:30:00.000Z","session_id":null,"type":"abort","payload":{}}`, nil, ErrSessionRequired, "session_id"},
		{"session_id malformed", mutate(t, specL2Event, func(m map[string]any) { m["session_id"] = "session-xyz" }), nil, ErrMalformed, "session_id"},
		{"session_id number", mutate(t, specL2Event, func(m map[string]any) { m["session_id"] = 5 }), nil, ErrWrongType, "session_id"},
		{"missing payload", mutate(t, specL2Event, func(m map[string]any) { delete(m, "payload") }), nil, ErrMissingField, "payload"},
		{"payload array", mutate(t, specL2Event, func(m map[string]any) { m["payload"] = []int{1} }), nil, ErrWrongType, "payload"},
		{"event without sequence", mutate(t, specL2Event, func(m map[string]any) { delete(payloadOf(m), "sequence") }), nil, ErrInvalidValue, "payload.sequence"},
		{"event sequence 0", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["sequence"] = 0 }), nil, ErrInvalidValue, "payload.sequence"},
		{"event sequence negative", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["sequence"] = -1 }), nil, ErrWrongType, "payload.sequence"},
		{"event sequence fractional", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["sequence"] = 1.5 }), nil, ErrWrongType, "payload.sequence"},
		{"event sequence string", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["sequence"] = "42" }), nil, ErrWrongType, "payload.sequence"},
		{"event sequence 2^53", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["sequence"] = uint64(1) << 53 }), nil, ErrInvalidValue, "payload.sequence"},
		{"event without data", mutate(t, specL2Event, func(m map[string]any) { delete(payloadOf(m), "data") }), nil, ErrMissingField, "payload.data"},
		{"event_type with dot", mutate(t, specL2Event, func(m map[string]any) { payloadOf(m)["event_type"] = "a.b" }), nil, ErrInvalidValue, "payload.event_type"},
		{"submit without capability", mutate(t, specL4TaskSubmit, func(m map[string]any) { delete(payloadOf(m), "capability") }), nil, ErrMissingField, "payload.capability"},
		{"submit without caller_id", mutate(t, specL4TaskSubmit, func(m map[string]any) { delete(payloadOf(m), "caller_id") }), nil, ErrMissingField, "payload.caller_id"},
		{"submit caller_id with #", mutate(t, specL4TaskSubmit, func(m map[string]any) { payloadOf(m)["caller_id"] = "alpha.#" }), nil, ErrInvalidValue, "payload.caller_id"},
		{"submit without intent", mutate(t, specL4TaskSubmit, func(m map[string]any) { payloadOf(m)["intent"] = "  " }), nil, ErrMissingField, "payload.intent"},
		{"submit without inputs", mutate(t, specL4TaskSubmit, func(m map[string]any) { delete(payloadOf(m), "inputs") }), nil, ErrMissingField, "payload.inputs"},
		{"submit inputs array", mutate(t, specL4TaskSubmit, func(m map[string]any) { payloadOf(m)["inputs"] = []int{} }), nil, ErrWrongType, "payload.inputs"},
		{"submit intent number", mutate(t, specL4TaskSubmit, func(m map[string]any) { payloadOf(m)["intent"] = 3 }), nil, ErrWrongType, "payload.intent"},
		{"submit T5", mutate(t, specL4TaskSubmit, func(m map[string]any) {
			payloadOf(m)["constraints"].(map[string]any)["data_classification"] = "T5"
		}), nil, ErrInvalidValue, "payload.constraints.data_classification"},
		{"submit confidence 2", mutate(t, specL4TaskSubmit, func(m map[string]any) {
			payloadOf(m)["constraints"].(map[string]any)["confidence_threshold"] = 2
		}), nil, ErrInvalidValue, "payload.constraints.confidence_threshold"},
		{"submit model_hint cheapest", mutate(t, specL4TaskSubmit, func(m map[string]any) {
			payloadOf(m)["constraints"].(map[string]any)["model_hint"] = "cheapest"
		}), nil, ErrInvalidValue, "payload.constraints.model_hint"},
		{"accepted risk R9", mutate(t, specL3Accepted, func(m map[string]any) { payloadOf(m)["risk_level"] = "R9" }), nil, ErrInvalidValue, "payload.risk_level"},
		{"accepted without token", mutate(t, specL3Accepted, func(m map[string]any) { delete(payloadOf(m), "session_token") }), nil, ErrMissingField, "payload.session_token"},
		{"rejected without reason_code", mutate(t, specL3Rejected, func(m map[string]any) { delete(payloadOf(m), "reason_code") }), nil, ErrMissingField, "payload.reason_code"},
		{"completed outputs string", mutate(t, specL4Completed, func(m map[string]any) { payloadOf(m)["outputs"] = "x" }), nil, ErrWrongType, "payload.outputs"},
		{"failed artifact without uri", mutate(t, specL4Failed, func(m map[string]any) {
			delete(payloadOf(m)["artifacts"].([]any)[0].(map[string]any), "uri")
		}), nil, ErrMissingField, "payload.artifacts[0].uri"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.dec
			if d == nil {
				d = defaultDecoder
			}
			env, err := d.Decode([]byte(tc.body))
			if err == nil {
				t.Fatalf("accepted: %+v", env)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T is not *DecodeError", err)
			}
			if de.Field != tc.field {
				t.Fatalf("Field = %q, want %q (%v)", de.Field, tc.field, err)
			}
		})
	}
}

func TestDecodeErrorCarriesIDs(t *testing.T) {
	body := mutate(t, specL4TaskSubmit, func(m map[string]any) { delete(payloadOf(m), "inputs") })
	_, err := Decode([]byte(body))
	var de *DecodeError
	if !errors.As(err, &de) || de.MessageID != testMsgID || de.Type != TypeTaskSubmit {
		t.Fatalf("err = %#v", err)
	}
	_, err = Decode([]byte(`{"message_id":"nope","type":"task_submit"}`))
	if !errors.As(err, &de) || de.MessageID != "" || de.Type != TypeTaskSubmit {
		t.Fatalf("err = %#v", err)
	}
}

func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		name string
		f    func(m map[string]any)
		chk  func(t *testing.T, env *Envelope)
	}{
		{"unknown envelope key ignored", func(m map[string]any) { m["x-extra"] = 1 }, nil},
		{"unknown payload key ignored", func(m map[string]any) { payloadOf(m)["x"] = true }, nil},
		{"minor version 1.7", func(m map[string]any) { m["hcp_version"] = "1.7" }, nil},
		{"uppercase uuid", func(m map[string]any) { m["message_id"] = strings.ToUpper(testMsgID) }, func(t *testing.T, env *Envelope) {
			if env.MessageID.String() != testMsgID {
				t.Fatal(env.MessageID)
			}
		}},
		{"timestamp +00:00 and µs truncated to ms", func(m map[string]any) { m["timestamp"] = "2025-01-15T08:30:00.123456+00:00" }, func(t *testing.T, env *Envelope) {
			if want := time.Date(2025, 1, 15, 8, 30, 0, 123e6, time.UTC); !env.Timestamp.Equal(want) || env.Timestamp.Location() != time.UTC {
				t.Fatal(env.Timestamp)
			}
		}},
		{"timestamp without fraction", func(m map[string]any) { m["timestamp"] = "2025-01-15T08:30:00Z" }, nil},
		{"custom event_type", func(m map[string]any) { payloadOf(m)["event_type"] = "furnace_reading" }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(mutate(t, specL2Event, tc.f)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.chk != nil {
				tc.chk(t, env)
			}
			roundTrip(t, env)
		})
	}
}

func TestTaskRejectedSessionOptional(t *testing.T) {
	body := mutate(t, specL3Rejected, func(m map[string]any) { m["session_id"] = testSessionID })
	env, err := Decode([]byte(body))
	if err != nil || env.SessionID == nil || env.SessionID.String() != testSessionID {
		t.Fatalf("env %+v err %v", env, err)
	}
}

func TestNewEnvelopeEncode(t *testing.T) {
	sid := uuid.New()
	at := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.FixedZone("CET", 3600))
	env, err := NewEnvelope(&sid, &Event{EventType: EventProgress, Sequence: 1, Data: json.RawMessage(`{"stage":"ramp <&>","percent":12.5}`)}, at)
	if err != nil {
		t.Fatal(err)
	}
	if env.MessageID.Version() != 4 || env.Type != TypeEvent || env.HCPVersion != Version {
		t.Fatalf("%+v", env)
	}
	body, err := Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `"timestamp":"2026-03-01T11:00:00.987Z"`
	if !bytes.Contains(body, []byte(want)) {
		t.Fatalf("body %s lacks %s", body, want)
	}
	if !bytes.Contains(body, []byte(`ramp <&>`)) {
		t.Fatalf("HTML-escaped: %s", body)
	}
	if !bytes.HasPrefix(body, []byte(`{"hcp_version":"1.0","message_id":"`)) {
		t.Fatalf("field order: %s", body)
	}
	roundTrip(t, env)

	sub, err := NewEnvelope(nil, &TaskSubmit{Capability: "c", CallerID: "a", Intent: "i", Inputs: json.RawMessage(`{}`)}, at)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = Encode(sub)
	if !bytes.Contains(body, []byte(`"session_id":null`)) {
		t.Fatalf("body %s", body)
	}
}

func TestEncodeRefuses(t *testing.T) {
	sid := uuid.New()
	tests := []struct {
		name string
		sid  *uuid.UUID
		p    Payload
		want error
	}{
		{"submit with session", &sid, &TaskSubmit{Capability: "c", CallerID: "a", Intent: "i", Inputs: json.RawMessage(`{}`)}, ErrSessionNotNull},
		{"event without session", nil, &Event{EventType: "log", Sequence: 1, Data: json.RawMessage(`{}`)}, ErrSessionRequired},
		{"event sequence 0", &sid, &Event{EventType: "log", Data: json.RawMessage(`{}`)}, ErrInvalidValue},
		{"completed without outputs", &sid, &TaskCompleted{}, ErrMissingField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEnvelope(tc.sid, tc.p, time.Now())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Encode(&Envelope{HCPVersion: "1.0", MessageID: uuid.New(), Timestamp: time.Now(), Type: "nope", Payload: json.RawMessage(`{}`)}); !errors.Is(err, ErrUnknownType) {
		t.Fatal(err)
	}
}

func TestNewDecoderOpts(t *testing.T) {
	if _, err := NewDecoder(Opts{}); err == nil {
		t.Fatal("zero MaxBodySize accepted")
	}
	if DefaultOpts().MaxBodySize != 1<<20 {
		t.Fatal(DefaultOpts())
	}
}

// roundTrip checks that env encodes, decodes equal, and its typed payload
// re-encodes to an equal typed payload.
func roundTrip(t testing.TB, env *Envelope) {
	t.Helper()
	body, err := Encode(env)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	env2, err := Decode(body)
	if err != nil {
		t.Fatalf("re-decode %s: %v", body, err)
	}
	if !envEqual(env, env2) {
		t.Fatalf("round trip differs:\n%+v\n%+v", env, env2)
	}
	body2, err := Encode(env2)
	if err != nil || !bytes.Equal(body, body2) {
		t.Fatalf("encoding not stable:\n%s\n%s (%v)", body, body2, err)
	}
	p1, err := env.DecodePayload()
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	raw, err := marshalNoEscape(p1)
	if err != nil {
		t.Fatal(err)
	}
	p2 := newPayload(env.Type)
	if de := decodePayload(raw, p2); de != nil {
		t.Fatalf("payload re-decode %s: %v", raw, de)
	}
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("payload round trip differs:\n%#v\n%#v", p1, p2)
	}
}

func envEqual(a, b *Envelope) bool {
	if (a.SessionID == nil) != (b.SessionID == nil) || (a.SessionID != nil && *a.SessionID != *b.SessionID) {
		return false
	}
	return a.HCPVersion == b.HCPVersion && a.MessageID == b.MessageID && a.Timestamp.Equal(b.Timestamp) &&
		a.Type == b.Type && bytes.Equal(a.Payload, b.Payload)
}
