package budget

import (
	"fmt"
	"time"
)

// SpentError is the error of a call that a budget has no room left for in
// its window: no wait within the window cures it, so the call fails at
// once. Find it with errors.As; Resets says when the caller may try again.
type SpentError struct {
	Budget string    // the budget's name
	Key    string    // the key (tenant, model) whose spend it is; empty for none
	Limit  int64     // what the window allows
	Spent  int64     // what the window has spent
	Cost   int64     // what the call asked for
	Resets time.Time // the end of the window, when the spend starts again from zero
}

func (e *SpentError) Error() string {
	who := fmt.Sprintf("budget %q", e.Budget)
	if e.Key != "" {
		who += fmt.Sprintf(" for %q", e.Key)
	}
	return fmt.Sprintf("%s is spent: %d of %d used, %d more asked; it resets at %s",
		who, e.Spent, e.Limit, e.Cost, e.Resets.Format(time.RFC3339))
}
