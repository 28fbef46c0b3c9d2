// Package modelrouter is the model router of the capability layer (seed
// 004 §2): each Raman analysis is routed across local and remote models by
// quality, time and cost, with fallback and budgets, and every invocation
// is tracked. Models advise, never act (DESIGN §4): an answer is data,
// validated against a schema and labelled with the model that gave it; the
// package reaches no instrument and no actuator.
//
// # Concepts
//
// The Registry lists the models (the `models:` section of the
// configuration): a tier from 1 (fast, cheap) to 3 (best), a kind (local,
// or openai for an OpenAI-compatible chat completions API with one or more
// instance URLs), its context window, cost per 1000 tokens in and out,
// typical latency, rpm limit and the highest data class it is cleared for.
// One local tier-1 model is the default: today's two-Lorentzian fit
// (package analysis). The local tier-2 model is package robust.
//
// A Request carries the spectrum, the material, the task's confidence
// threshold, data class, model hint (fast, best), an optional policy and
// its time and cost budgets. Router.Analyze returns a Decision: the Answer
// (layer count, coverage per layer count, confidence, rationale), the model
// and instance that gave it, every Attempt, the cost, warnings, and maybe a
// Reacquire advice (a longer integration when noise limits the answer).
//
// # Routing
//
//  1. The default tier-1 fit always runs first (microseconds to a
//     millisecond, free); the router reads the spectrum's Quality from it
//     and a few cheap checks (spikes, saturation, background curvature).
//  2. It escalates when the answer's confidence is below the threshold;
//     under Balance (the default) also when the quality is poor; under
//     MaximizeQuality or the hint best always. The hint fast, and the
//     policy MinimizeCost, escalate on low confidence only, and fast never
//     leaves the agent.
//  3. Escalation walks the ladder: local models first (tier 2), then remote
//     ones by tier and cost, stopping at the first answer at or above the
//     threshold; best and MaximizeQuality ask the best remote model first
//     and fall back down. A higher tier's answer replaces a lower one's.
//  4. Before sending anything, a model must be cleared for the request's
//     data class (a refusal is recorded and audited: T3/T4 data never goes
//     to a model not cleared for it), its typical latency must fit in the
//     time left, and its estimated cost in the task's and the day's budget.
//
// # Reliability
//
// Every remote instance has a circuit breaker (sony/gobreaker: opens after
// Breaker.Failures failures in a row, stays open Breaker.Cooldown, then lets
// one probe through: half-open). Each model has an rpm limit
// (golang.org/x/time/rate). A transient failure (timeout, 429, 5xx,
// unreachable) is retried on the same instance with exponential backoff
// and jitter, or after the server's Retry-After, then another instance,
// then the next model. An answer that is not JSON valid against
// AnswerSchema is a failed invocation: the next model is asked. A request
// the model refuses (4xx) is not sent to other remote models. When every
// better model fails, the answer is the best local one, with its own
// confidence and a warning: no analysis is lost. Attempts time out after
// three typical latencies.
//
// # Remote tier
//
// A remote model is sent a compact Description, sized to its context
// window (EstimateTokens: a byte-count estimate): the fitted peaks with
// their uncertainties, a residual summary, the tier-2 reading, and the
// spectrum down-sampled over the material's window. It must answer one JSON
// object valid against AnswerSchema.
//
// # Tracking
//
// The Tracker records every invocation (model, instance, tier, latency,
// tokens, cost, outcome, confidence, whether it was taken) and keeps
// per-model statistics: calls, outcomes, p50/p99 latency, spend total and
// today's; Recommendations reads them. Each record is also audited, under
// the Request's Task, as an EventInvocation.
//
// # Caveats
//
// The router keeps no goroutine; health checks (CheckHealth) run when the
// caller calls them. The daily spend lives in the Tracker: the caller saves
// it (Tracker.Save, the agent after every analysis) and loads it at start
// (LoadTracker), or a restart forgets it.
package modelrouter
