package agent

import "time"

// hangGuard bounds every wait of these tests: a guard against hangs, never a
// performance assertion.
const hangGuard = 20 * time.Second
