package modelrouter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"hcp-edge/session/analysis"
)

// Coverage is the share of the covered area with one layer count.
type Coverage struct {
	Layers   int     `json:"layers"` // 0..4, 4 = bulk
	Fraction float64 `json:"fraction"`
}

// Answer is what a model says of a spectrum, whichever model: the layer
// count, the coverage per layer count, the model's confidence, and why. A
// remote model's answer must be JSON valid against AnswerSchema.
type Answer struct {
	Material   analysis.Material `json:"material,omitempty"`
	LayerCount int               `json:"layer_count"` // 0 = none found, 4 = bulk
	Coverage   []Coverage        `json:"coverage"`
	Confidence float64           `json:"confidence"`
	Rationale  string            `json:"rationale"`
}

// AnswerSchema is the JSON Schema (2020-12) of a remote model's answer; its
// material enum is the analysis's materials (analysis.Materials).
func AnswerSchema() string {
	return fmt.Sprintf(answerSchemaFmt, strings.Join(analysis.MaterialNames(), `", "`))
}

// answerSchemaFmt is AnswerSchema with the materials left out (%s).
const answerSchemaFmt = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["layer_count", "coverage", "confidence", "rationale"],
  "additionalProperties": false,
  "properties": {
    "material": {"enum": ["%s"]},
    "layer_count": {"type": "integer", "minimum": 0, "maximum": 4},
    "coverage": {
      "type": "array", "maxItems": 5,
      "items": {
        "type": "object", "required": ["layers", "fraction"], "additionalProperties": false,
        "properties": {
          "layers": {"type": "integer", "minimum": 0, "maximum": 4},
          "fraction": {"type": "number", "minimum": 0, "maximum": 1}
        }
      }
    },
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "rationale": {"type": "string", "maxLength": 2000}
  }
}`

// answerSchema is AnswerSchema compiled once, on first use rather than at
// start (every hcp-edge command would pay it at exec; it is a constant: a
// failure is a programming error).
var answerSchema = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(AnswerSchema())))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	const url = "hcp-edge:model-answer.json"
	if err := c.AddResource(url, doc); err != nil {
		panic(err)
	}
	return c.MustCompile(url)
})

// ParseAnswer decodes a model's answer and validates it against
// AnswerSchema; the error says what is wrong.
func ParseAnswer(raw []byte) (Answer, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return Answer{}, fmt.Errorf("not JSON: %w", err)
	}
	if err := answerSchema().Validate(doc); err != nil {
		return Answer{}, fmt.Errorf("against the answer schema: %w", err)
	}
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Answer{}, err
	}
	return a, nil
}
