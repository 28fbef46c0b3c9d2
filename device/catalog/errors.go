package catalog

import (
	"errors"
	"fmt"
)

// Sentinel errors of the catalog. The typed errors below match them with
// errors.Is.
var (
	// ErrDuplicate: a tool with the same (name, version) or the same id is
	// already registered.
	ErrDuplicate = errors.New("catalog: tool already registered")
	// ErrInvalidTool: a tool specification is malformed (name, version, id,
	// metadata).
	ErrInvalidTool = errors.New("catalog: invalid tool specification")
	// ErrInvalidSchema: an input or output schema does not compile.
	ErrInvalidSchema = errors.New("catalog: invalid JSON schema")
	// ErrNotFound: no tool with that name (and version), or no tool has the
	// capability tag.
	ErrNotFound = errors.New("catalog: no such tool")
	// ErrInvalidInput: a tool input does not validate against the input schema.
	ErrInvalidInput = errors.New("catalog: input does not match the tool's input schema")
	// ErrInvalidOutput: a tool output does not validate against the output schema.
	ErrInvalidOutput = errors.New("catalog: output does not match the tool's output schema")
)

// DuplicateError reports a registration refused because the (name, version)
// or the id is taken.
type DuplicateError struct {
	Name, Version string
	ID            string // set when the id, not the (name, version), collides
}

func (e *DuplicateError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("catalog: %s@%s: tool id %s already registered", e.Name, e.Version, e.ID)
	}
	return fmt.Sprintf("catalog: %s@%s already registered", e.Name, e.Version)
}

// Is makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// InvalidToolError reports a malformed field of a tool specification.
type InvalidToolError struct {
	Name, Version string
	Field         string // the JSON name of the offending field, e.g. "version"
	Reason        string
}

func (e *InvalidToolError) Error() string {
	return fmt.Sprintf("catalog: %s@%s: %s: %s", e.Name, e.Version, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidTool) true.
func (e *InvalidToolError) Is(target error) bool { return target == ErrInvalidTool }

// SchemaError reports an input or output schema that does not compile; Err is
// the compiler's error.
type SchemaError struct {
	Name, Version string
	Which         string // "input_schema" or "output_schema"
	Err           error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("catalog: %s@%s: %s: %v", e.Name, e.Version, e.Which, e.Err)
}

// Is makes errors.Is(err, ErrInvalidSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrInvalidSchema }

// Unwrap returns the compiler's error.
func (e *SchemaError) Unwrap() error { return e.Err }

// ValidationError reports an input or output that does not match its schema;
// Err is the validator's error (a *jsonschema.ValidationError when the value
// decoded but did not validate).
type ValidationError struct {
	Name, Version string
	Which         string // "input" or "output"
	Err           error
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("catalog: %s@%s: invalid %s: %v", e.Name, e.Version, e.Which, e.Err)
}

// Is makes errors.Is match ErrInvalidInput or ErrInvalidOutput, after Which.
func (e *ValidationError) Is(target error) bool {
	return (target == ErrInvalidInput && e.Which == "input") ||
		(target == ErrInvalidOutput && e.Which == "output")
}

// Unwrap returns the validator's error.
func (e *ValidationError) Unwrap() error { return e.Err }
