package wire

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestSessionHandoff(t *testing.T) {
	sid := uuid.New()
	body := func(session, payload string) []byte {
		return []byte(`{"hcp_version":"1.0","message_id":"` + uuid.NewString() + `","timestamp":"2026-11-26T05:00:00.000Z",` +
			`"session_id":` + session + `,"type":"session_handoff","payload":` + payload + `}`)
	}
	for _, tc := range []struct {
		name    string
		body    []byte
		want    error
		to      string
		reason  string
		wantErr string
	}{
		{name: "valid", body: body(`"`+sid.String()+`"`, `{"to":"harness-beta-002","reason":"night shift"}`), to: "harness-beta-002", reason: "night shift"},
		{name: "no reason", body: body(`"`+sid.String()+`"`, `{"to":"b"}`), to: "b"},
		{name: "no session", body: body(`null`, `{"to":"b"}`), want: ErrSessionRequired},
		{name: "no target", body: body(`"`+sid.String()+`"`, `{}`), want: ErrMissingField, wantErr: "payload.to"},
		{name: "target not an id", body: body(`"`+sid.String()+`"`, `{"to":"a.b"}`), want: ErrInvalidValue, wantErr: "payload.to"},
		{name: "reason too long", body: body(`"`+sid.String()+`"`, `{"to":"b","reason":"`+strings.Repeat("x", 501)+`"}`), want: ErrInvalidValue, wantErr: "payload.reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode(tc.body)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(errString(err), tc.wantErr) {
					t.Fatalf("err %v, want %v (%s)", err, tc.want, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := env.SessionHandoff()
			if err != nil || p.To != tc.to || p.Reason != tc.reason || !env.Type.IsCommand() || *env.SessionID != sid {
				t.Fatalf("%+v %v", p, err)
			}
		})
	}
	// It is a command: never routed on the events exchange.
	env, err := NewEnvelope(&sid, &SessionHandoff{To: "b"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EventRoutingKey("a", env); err == nil {
		t.Fatal("session_handoff got an event routing key")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
