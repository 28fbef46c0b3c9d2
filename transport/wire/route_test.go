package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestRoutingKeys(t *testing.T) {
	sid := uuid.MustParse(testSessionID)
	ev := &Envelope{Type: TypeEvent, SessionID: &sid}
	rej := &Envelope{Type: TypeTaskRejected}
	tests := []struct {
		name   string
		caller string
		env    *Envelope
		want   string
		err    error
	}{
		{"event", "alpha", ev, "alpha." + testSessionID + ".event", nil},
		{"rejected without session", "harness-alpha-001", rej, "harness-alpha-001.none.task_rejected", nil},
		{"caller with dot", "a.b", ev, "", ErrInvalidValue},
		{"caller with #", "a#", ev, "", ErrInvalidValue},
		{"caller empty", "", ev, "", ErrInvalidValue},
		{"command type", "alpha", &Envelope{Type: TypeTaskSubmit}, "", ErrInvalidValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EventRoutingKey(tc.caller, tc.env)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
			c, s, ty, err := ParseEventRoutingKey(got)
			if err != nil || c != tc.caller || ty != tc.env.Type || (s != NoSession && s != testSessionID) {
				t.Fatalf("parse: %q %q %q %v", c, s, ty, err)
			}
		})
	}
	if q, _ := CommandQueue("lab-cvd"); q != "hcp.cmd.lab-cvd" {
		t.Fatal(q)
	}
	if q, _ := EventQueue("alpha"); q != "hcp.evt.alpha" {
		t.Fatal(q)
	}
	if b, _ := EventBinding("alpha"); b != "alpha.#" {
		t.Fatal(b)
	}
	if k, _ := CommandRoutingKey("lab-cvd"); k != "lab-cvd" {
		t.Fatal(k)
	}
	for _, bad := range []string{"a.b.c.d", "a.b", "a.x.nope", "a*.x.event"} {
		if _, _, _, err := ParseEventRoutingKey(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestProperties(t *testing.T) {
	sid := uuid.MustParse(testSessionID)
	env := &Envelope{HCPVersion: "1.0", MessageID: uuid.MustParse(testMsgID), Timestamp: time.Date(2025, 1, 15, 8, 30, 0, 500e6, time.UTC), SessionID: &sid, Type: TypeTaskAccepted}
	p := PropertiesFor(env, "11111111-2222-4333-8444-555555555555")
	if p.ContentType != "application/json" || p.ContentEncoding != "utf-8" || p.DeliveryMode != 2 ||
		p.MessageID != testMsgID || p.CorrelationID != testSessionID || p.Type != "task_accepted" ||
		!p.Timestamp.Equal(time.Date(2025, 1, 15, 8, 30, 0, 0, time.UTC)) || p.Headers[HeaderInReplyTo] != "11111111-2222-4333-8444-555555555555" {
		t.Fatalf("%+v", p)
	}
	if err := CheckProperties(p, env); err != nil {
		t.Fatal(err)
	}
	noSess := &Envelope{MessageID: env.MessageID, Type: TypeTaskSubmit}
	if q := PropertiesFor(noSess, ""); q.CorrelationID != "" || q.Headers != nil {
		t.Fatalf("%+v", q)
	}
	tests := []struct {
		name  string
		f     func(p *Properties)
		field string
	}{
		{"content type", func(p *Properties) { p.ContentType = "text/plain" }, "properties.content_type"},
		{"encoding", func(p *Properties) { p.ContentEncoding = "latin1" }, "properties.content_encoding"},
		{"no message_id", func(p *Properties) { p.MessageID = "" }, "properties.message_id"},
		{"other message_id", func(p *Properties) { p.MessageID = uuid.NewString() }, "properties.message_id"},
		{"no type", func(p *Properties) { p.Type = "" }, "properties.type"},
		{"other type", func(p *Properties) { p.Type = "event" }, "properties.type"},
		{"other correlation", func(p *Properties) { p.CorrelationID = uuid.NewString() }, "properties.correlation_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := PropertiesFor(env, "")
			tc.f(&q)
			err := CheckProperties(q, env)
			var de *DecodeError
			if !errors.Is(err, ErrPropertyMismatch) || !errors.As(err, &de) || de.Field != tc.field {
				t.Fatalf("err = %v", err)
			}
		})
	}
	ok := PropertiesFor(env, "")
	ok.ContentEncoding = "UTF-8"
	if err := CheckProperties(ok, env); err != nil {
		t.Fatal(err)
	}
}
