package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// AnalyzeTimeout is raman.analyze's timeout: the Invoker cuts the handler off
// after it. The model router's time budget (model_routing.time_budget) must
// be shorter, so that the router's own fallback answers first.
const AnalyzeTimeout = 2 * time.Minute

// ToolAnalyze is the Raman analysis: a spectrum in, the layer count, the
// coverage, the confidence and the model that decided out. It is a compute
// tool (CategoryCompute): it reaches no instrument.
const ToolAnalyze = "raman.analyze"

// CategoryCompute is the category of a compute tool: one that reaches no
// instrument. The Invoker runs the handler the wiring code registered for
// it (the model router, for ToolAnalyze) and never the interlock; Register
// refuses a compute tool marked Dangerous.
const CategoryCompute = "compute"

// Compute reports whether t is a compute tool (CategoryCompute).
func (t Tool) Compute() bool { return t.Category == CategoryCompute }

// analyzeInput is the input of raman.analyze: the spectrum as the
// spectrometer gave it, and what the task asks of its analysis. %s is
// the material's schema (materialSchema).
const analyzeInput = `{
  "type": "object",
  "required": ["spectrum"],
  "properties": {
    "task": {"type": "string", "minLength": 1, "maxLength": 128,
      "description": "the task (the session id) the analysis is tracked and audited under"},
    "spectrum": {
      "type": "object",
      "required": ["shift", "counts", "integration_ms"],
      "properties": {
        "shift":          {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 65536,
          "description": "Raman shift, cm^-1, ascending"},
        "counts":         {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 65536,
          "description": "intensity, counts, one per shift"},
        "integration_ms": {"type": "integer", "minimum": 0, "maximum": 60000},
        "at":             {"type": "string", "format": "date-time"}
      },
      "additionalProperties": false
    },
    "material":             %s,
    "confidence_threshold": {"type": "number", "minimum": 0, "maximum": 1},
    "data_class":           {"enum": ["T1", "T2", "T3", "T4"]},
    "model_hint":           {"enum": ["fast", "best"]},
    "policy":               {"enum": ["minimize_cost", "balance", "maximize_quality"]},
    "time_budget_ms":       {"type": "integer", "minimum": 1, "maximum": 86400000},
    "cost_budget":          {"type": "number", "minimum": 0,
      "description": "what the task may spend on models (0: nothing; absent: the router's default)"}
  },
  "additionalProperties": false
}`

// analyzeOutput is the output of raman.analyze: the deciding model's answer,
// what the router tried, and the tier-1 fit it read the spectrum with.
// %[1]s is a material's schema (also an identified band's), %[2]s the
// identified name's, %[3]s the fit's material-named readings
// (materialSchema, readingProps).
const analyzeOutput = `{
  "type": "object",
  "required": ["routed", "model", "tier", "layer_count", "confidence", "fallback", "cost", "fit"],
  "properties": {
    "routed":      {"type": "boolean"},
    "model":       {"type": "string", "minLength": 1},
    "tier":        {"type": "integer", "minimum": 1, "maximum": 3},
    "material":    %[1]s,
    "layer_count": {"type": "integer", "minimum": 0, "maximum": 4},
    "coverage": {
      "type": "array", "maxItems": 5,
      "items": {
        "type": "object", "required": ["layers", "fraction"], "additionalProperties": false,
        "properties": {
          "layers":   {"type": "integer", "minimum": 0, "maximum": 4},
          "fraction": {"type": "number", "minimum": 0, "maximum": 1}
        }
      }
    },
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "rationale":  {"type": "string", "maxLength": 2000},
    "fallback":   {"type": "boolean"},
    "warnings":   {"type": "array", "items": {"type": "string"}},
    "attempts": {
      "type": "array",
      "items": {
        "type": "object", "required": ["model", "tier", "outcome"], "additionalProperties": false,
        "properties": {
          "model":      {"type": "string", "minLength": 1},
          "tier":       {"type": "integer", "minimum": 1, "maximum": 3},
          "outcome":    {"type": "string", "minLength": 1},
          "confidence": {"type": "number", "minimum": 0, "maximum": 1}
        }
      }
    },
    "cost": {"type": "number", "minimum": 0},
    "identified": {
      "type": "object", "required": ["name", "confidence"], "additionalProperties": false,
      "description": "what the spectrum shows, named from its band positions (session/analysis Identify)",
      "properties": {
        "name":       %[2]s,
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "fractions":  {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}},
        "bands": {
          "type": "array", "maxItems": 8,
          "items": {
            "type": "object", "required": ["material", "e2g_cm1", "a1g_cm1"], "additionalProperties": false,
            "properties": {
              "material": %[1]s,
              "e2g_cm1": {"type": "number"}, "e2g_err_cm1": {"type": "number"},
              "a1g_cm1": {"type": "number"}, "a1g_err_cm1": {"type": "number"},
              "e2g_height": {"type": "number"}, "a1g_height": {"type": "number"},
              "snr": {"type": "number"}, "in_published_ranges": {"type": "number", "minimum": 0, "maximum": 1}
            }
          }
        },
        "reason": {"type": "string"}
      }
    },
    "reacquire": {
      "type": "object", "required": ["integration_ms", "reason"], "additionalProperties": false,
      "properties": {
        "integration_ms": {"type": "integer", "minimum": 1, "maximum": 60000},
        "reason":         {"type": "string"}
      }
    },
    "fit": {
      "type": "object",
      "required": ["found", "layer_count", "confidence"],
      "properties": {
        "found":             {"type": "boolean"},
        "reason":            {"type": "string"},
        "material":          %[1]s,
        "e2g":               {"$ref": "#/$defs/peak"},
        "a1g":               {"$ref": "#/$defs/peak"},
        "peak_distance":     {"type": "number"},
        "peak_distance_err": {"type": "number"},
        "layer_count":       {"type": "integer", "minimum": 0, "maximum": 4},
        "bulk":              {"type": "boolean"},
        "confidence":        {"type": "number", "minimum": 0, "maximum": 1},
        "baseline": {
          "type": "object", "additionalProperties": false,
          "properties": {"center_cm1": {"type": "number"}, "offset": {"type": "number"}, "slope_per_cm1": {"type": "number"}}
        },
        "r_squared":    {"type": "number"},
        "fit_residual": {"type": "number"},
        "noise":        {"type": "number"},
        "snr":          {"type": "number"},
        "points":       {"type": "integer", "minimum": 0}%[3]s
      },
      "additionalProperties": false
    }
  },
  "additionalProperties": false,
  "$defs": {
    "peak": {
      "type": "object", "additionalProperties": false,
      "properties": {
        "position_cm1": {"type": "number"}, "position_err_cm1": {"type": "number"},
        "fwhm_cm1": {"type": "number"}, "fwhm_err_cm1": {"type": "number"},
        "amplitude": {"type": "number"}, "amplitude_err": {"type": "number"}
      }
    }
  }
}`

// materialSchema is the schema of a material's name: one of materials, or
// of extra (the names that are not materials: "auto", "mixture", "none");
// with no materials, any short name (the analysis then refuses an unknown
// one with its own typed error).
func materialSchema(materials []string, extra ...string) string {
	if len(materials) == 0 {
		return `{"type": "string", "minLength": 1, "maxLength": 64}`
	}
	return fmt.Sprintf(`{"enum": %s}`, mustJSON(append(append([]string(nil), materials...), extra...)))
}

// readingProps are the fit's readings named by their material (a
// material whose analysis reads more than two peaks, e.g. three bands,
// reports them under its own name: session/analysis Result).
func readingProps(materials []string) string {
	var b strings.Builder
	for _, m := range materials {
		fmt.Fprintf(&b, ",\n        %s: {\"type\": \"object\", \"description\": %s}", mustJSON(m),
			mustJSON("the "+m+" analysis's own reading of its bands, when it has one (session/analysis Result)"))
	}
	return b.String()
}

// analyzeTool is raman.analyze@BuiltinVersion.
//
// Its permission is rig.measure. It moves nothing, so rig.read would be the
// least permission of all, but it does more than read the rig: it spends
// the task's model budget and may send the spectrum to a remote model (the
// router clears each model for the data class). rig.measure is the least
// permission that fits: every session that acquires a spectrum holds it
// (gate.derivedPermissions: a spectrometer resource), so every session that
// has a spectrum to analyse may analyse it, and a read-only session
// (rig-status, leak-check: rig.read) may not spend model budget.
//
// Its timeout bounds the whole routing (the router's own time budget, 30 s
// by default, and the remote models' retries): past it, the call fails.
//
// materials are the materials the analysis has a model for
// (session/analysis.Materials, handed down by the wiring): the enums of its
// schemas. Without them a material is any short name.
func analyzeTool(materials []string) Tool {
	return Tool{
		ID: "6b1f0c3e-5a0e-4c1d-9a11-00000000000c", Name: ToolAnalyze, Version: BuiltinVersion,
		Description: "Analyse a Raman spectrum (layer count, coverage, confidence) through the model router; reaches no instrument.",
		Category:    CategoryCompute, Capabilities: []string{"raman", "analysis", "compute"},
		InputSchema:  json.RawMessage(fmt.Sprintf(analyzeInput, materialSchema(materials, "auto"))),
		OutputSchema: json.RawMessage(fmt.Sprintf(analyzeOutput, materialSchema(materials), materialSchema(materials, "mixture", "none"), readingProps(materials))),
		Safety: Safety{Permission: PermissionMeasure, RiskLevel: R1, Dangerous: false,
			SideEffects: []string{}, Reversible: true, Idempotent: false,
			RateLimit: RateLimit{MaxCalls: 30, Per: time.Minute}},
		Performance: Performance{TypicalLatency: 50 * time.Millisecond, Timeout: AnalyzeTimeout},
	}
}
