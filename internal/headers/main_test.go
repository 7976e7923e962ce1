package headers

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// now is the reference instant of the tests: Sunday 2025-06-01 12:00:00 UTC,
// Unix 1748779200.
var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const maxDur = time.Duration(1<<63 - 1)
