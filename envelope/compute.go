package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"hcp-edge/device/catalog"
)

// ComputeTool is the handler of a compute tool (catalog.CategoryCompute,
// such as raman.analyze): it turns the tool's input, already valid against
// its input schema, into its output, which the Invoker validates against the
// output schema. It is given JSON and returns JSON: it is handed no Action,
// no instrument and no interlock, and nothing it returns is ever applied,
// so a compute tool cannot move the rig whatever its handler does.
//
// The wiring code registers it (Invoker.SetCompute), so that envelope
// never imports what computes (the model router lives in session/). It
// must honour ctx: the Invoker bounds it by the tool's timeout and stops
// waiting for it then. An error wrapping catalog.ErrInvalidInput is a
// refusal of the input (invalid_input, audited); any other is a failure.
type ComputeTool func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// ErrNoHandler: a compute tool was invoked, or a handler registered, with
// no handler for it (the wiring code registered none), or SetCompute was
// asked to register one for a tool that is not a compute tool.
var ErrNoHandler = errors.New("envelope: no compute handler")

// ErrHandlerPanic: a compute tool's handler panicked; the Invoker recovers
// it into this failure (the agent's monitor runs in the same process).
var ErrHandlerPanic = errors.New("envelope: compute handler panicked")

// SetCompute registers h as the handler of the compute tool ref (a
// version is required), replacing any handler registered before. It
// refuses a tool the catalog does not hold (catalog.ErrNotFound) and a tool
// that is not a compute tool (ErrNoHandler): an actuator or measurement tool
// always goes through the interlock, and no handler can stand in for it.
func (iv *Invoker) SetCompute(ref ToolRef, h ComputeTool) error {
	if h == nil || ref.Version == "" {
		return fmt.Errorf("envelope: SetCompute %s: a handler and a version are required: %w", ref, ErrNoHandler)
	}
	tool, err := iv.reg.Describe(ref.Name, ref.Version)
	if err != nil {
		return fmt.Errorf("envelope: SetCompute: %w", err)
	}
	if !tool.Compute() {
		return fmt.Errorf("envelope: SetCompute %s: category %q is not %q (its calls go through the interlock): %w",
			ref, tool.Category, catalog.CategoryCompute, ErrNoHandler)
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.compute[ToolRef{Name: tool.Name, Version: tool.Version}] = h
	return nil
}

func (iv *Invoker) handler(ref ToolRef) ComputeTool {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	return iv.compute[ref]
}

// invokeCompute is Invoke's path for a compute tool: lookup of its handler,
// authenticate, input schema, permission, rate limit, the handler bounded
// by the tool's timeout, output schema. It has no Action: no step of it is
// toward safe, every refusal is audited without one, and the interlock is
// never called.
func (iv *Invoker) invokeCompute(ctx context.Context, token string, tool catalog.Tool, ref ToolRef, input json.RawMessage) outcome {
	refused := func(stage string, rule Rule, err error) outcome {
		return outcome{stage: stage, rule: rule, err: err}
	}
	h := iv.handler(ref)
	if h == nil {
		return outcome{stage: StageLookup, err: fmt.Errorf("envelope: tool %s: %w registered", ref, ErrNoHandler)}
	}
	auth := iv.il.auth.(ToolAuthorizer) // checked by NewInvoker
	who, err := auth.Authenticate(ctx, token)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
		return refused(StagePermission, RuleUnauthorized, iv.refuse(ctx, "", ref, nil, "", err))
	}
	if err := tool.ValidateInputJSON(input); err != nil {
		return refused(StageInput, RuleInvalidInput, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err))
	}
	grant, err := auth.AuthorizeTool(ctx, token, tool)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
		return refused(StagePermission, RulePermission, iv.refuse(ctx, who.SessionID, ref, nil, "", err))
	}
	if !slices.Contains(grant.Permissions, tool.Safety.Permission) {
		err := fmt.Errorf("%w: the grant lacks permission %s", ErrUnauthorized, tool.Safety.Permission)
		return refused(StagePermission, RulePermission, iv.refuse(ctx, grant.SessionID, ref, nil, RulePermission, err))
	}
	if err := iv.allow(ref, tool.Safety.RateLimit, false); err != nil {
		return refused(StageRateLimit, RuleRateLimit, iv.refuse(ctx, who.SessionID, ref, nil, RuleRateLimit, err))
	}

	out, err := runBounded(ctx, tool, h, input)
	if err != nil {
		if errors.Is(err, catalog.ErrInvalidInput) {
			return refused(StageInput, RuleInvalidInput, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err))
		}
		return outcome{stage: StageExecute, err: err}
	}
	if err := validateOutput(tool, out); err != nil {
		return outcome{stage: StageOutput, err: err}
	}
	return outcome{out: out}
}

// runBounded runs h within the tool's timeout. A handler that overruns it
// is abandoned (its goroutine ends when h returns; nothing waits for it),
// and a panic is recovered into ErrHandlerPanic.
func runBounded(ctx context.Context, tool catalog.Tool, h ComputeTool, input json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, tool.Performance.Timeout)
	defer cancel()
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1) // never blocks the handler's goroutine
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("%w: %v", ErrHandlerPanic, p)}
			}
		}()
		out, err := h(ctx, input)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("envelope: tool %s: the handler did not answer within %v: %w", tool.Ref(), tool.Performance.Timeout, ctx.Err())
	}
}
