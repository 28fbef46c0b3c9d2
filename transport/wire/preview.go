package wire

import (
	"bytes"
	"encoding/json"
)

// PreviewRequest is the payload of preview_request (extension): run a task
// of Capability with Inputs on the callee's simulated rig and predict it
// (docs/PROTOCOL-NOTES.md, "Preview"). It touches no hardware and opens no
// session. The asking harness is the broker-validated user_id.
type PreviewRequest struct {
	Capability string `json:"capability"`
	// CapabilityVersion is a version or range as in task_submit (empty:
	// the highest).
	CapabilityVersion string `json:"capability_version,omitempty"`
	// Inputs are the task's inputs, as a task_submit would carry them.
	Inputs json.RawMessage `json:"inputs"`
}

// MessageType returns TypePreviewRequest.
func (*PreviewRequest) MessageType() Type { return TypePreviewRequest }

// Validate requires a capability (1–128 characters) and inputs as an
// object.
func (p *PreviewRequest) Validate() error {
	switch {
	case p.Capability == "":
		return derr("payload.capability", KindMissing, "")
	case len(p.Capability) > 128:
		return derr("payload.capability", KindInvalid, "longer than 128 characters")
	case len(p.CapabilityVersion) > 64:
		return derr("payload.capability_version", KindInvalid, "longer than 64 characters")
	}
	return reqObject("payload.inputs", p.Inputs)
}

// PreviewResponse is the payload of preview_response (extension): the
// prediction of the previewed task on the callee's simulated rig.
type PreviewResponse struct {
	CalleeID   string `json:"callee_id"`
	Capability string `json:"capability"`
	Version    string `json:"capability_version"`
	// Prediction is the callee's prediction (cmd/hcp-edge/internal/preview
	// Prediction as JSON): per-step and per-phase durations, gas, heater
	// energy, margins, refusals, trips, the product.
	Prediction json.RawMessage `json:"prediction"`
}

// MessageType returns TypePreviewResponse.
func (*PreviewResponse) MessageType() Type { return TypePreviewResponse }

// Validate requires callee_id, capability, version and a prediction object.
func (p *PreviewResponse) Validate() error {
	if err := CheckID(p.CalleeID); err != nil {
		return withField(err, "payload.callee_id")
	}
	switch {
	case p.Capability == "":
		return derr("payload.capability", KindMissing, "")
	case p.Version == "":
		return derr("payload.capability_version", KindMissing, "")
	}
	return reqObject("payload.prediction", bytes.TrimSpace(p.Prediction))
}

// PreviewRequest returns the typed payload of a preview_request.
func (env *Envelope) PreviewRequest() (*PreviewRequest, error) {
	return payloadAs[*PreviewRequest](env, TypePreviewRequest)
}

// PreviewResponse returns the typed payload of a preview_response.
func (env *Envelope) PreviewResponse() (*PreviewResponse, error) {
	return payloadAs[*PreviewResponse](env, TypePreviewResponse)
}
