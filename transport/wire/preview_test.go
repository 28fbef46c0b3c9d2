package wire

import (
	"strings"
	"testing"
)

func TestPreviewMessages(t *testing.T) {
	for _, tc := range []struct {
		name, body, field string // field: the error names it ("": valid)
	}{
		{"request", extBody(TypePreviewRequest, "", `{"capability":"leak-check","inputs":{}}`), ""},
		{"request with a version", extBody(TypePreviewRequest, "", `{"capability":"leak-check","capability_version":"1.x","inputs":{"a":1}}`), ""},
		{"request without capability", extBody(TypePreviewRequest, "", `{"inputs":{}}`), "payload.capability"},
		{"request with inputs not an object", extBody(TypePreviewRequest, "", `{"capability":"leak-check","inputs":[1]}`), "payload.inputs"},
		{"request without inputs", extBody(TypePreviewRequest, "", `{"capability":"leak-check"}`), "payload.inputs"},
		{"request with a session", extBody(TypePreviewRequest, extSession, `{"capability":"leak-check","inputs":{}}`), "session_id"},
		{"response", extBody(TypePreviewResponse, "", `{"callee_id":"hcp-edge","capability":"leak-check","capability_version":"1.0.0","prediction":{"completed":true}}`), ""},
		{"response without prediction", extBody(TypePreviewResponse, "", `{"callee_id":"hcp-edge","capability":"leak-check","capability_version":"1.0.0"}`), "payload.prediction"},
		{"refusal of a preview", extBody(TypeRequestRefused, "", `{"request_type":"preview_request","reason_code":"invalid_input","reason_message":"m"}`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Decode([]byte(tc.body))
			if tc.field != "" {
				if err == nil || !strings.Contains(err.Error(), tc.field) {
					t.Fatalf("err %v, want one naming %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch env.Type {
			case TypePreviewRequest:
				if _, err := env.PreviewRequest(); err != nil {
					t.Fatal(err)
				}
			case TypePreviewResponse:
				r, err := env.PreviewResponse()
				if err != nil || string(r.Prediction) != `{"completed":true}` {
					t.Fatalf("%v %s", err, r.Prediction)
				}
			}
		})
	}
	if !TypePreviewRequest.IsCommand() || !TypePreviewRequest.IsRequest() || !TypePreviewResponse.IsResponse() || TypePreviewResponse.IsCommand() {
		t.Fatal("preview types misclassified")
	}
}
