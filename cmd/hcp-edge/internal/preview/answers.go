package preview

import (
	"context"
	"errors"
	"fmt"

	"hcp-edge/session/executor"
)

// ErrNoAnswer: the recipe asks a question the preview was given no
// answer to (Opts.Answers; the CLI's --answer NAME=VALUE). The run stops
// there and the prediction says so.
var ErrNoAnswer = errors.New("preview: a question without an answer")

// answers is the preview's executor.Asker: a recipe's questions answered
// from Opts.Answers (the answer's text, as an operator would type it), at
// once: the simulated run does not wait.
type answers map[string]string

func (a answers) Ask(_ context.Context, q executor.Question) (any, bool, error) {
	text, ok := a[q.Name]
	if !ok {
		return nil, false, fmt.Errorf("%w: %s (%q, before %s; it takes %s): give --answer %s=VALUE",
			ErrNoAnswer, q.Name, q.Text, q.StepName, q.Answer, q.Name)
	}
	v, err := q.Answer.Parse(q.Name, text)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", executor.ErrInput, err)
	}
	return v, false, nil
}
