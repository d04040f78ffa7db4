package report

import (
	"testing"
	"time"
)

// Test hooks for the external test package report_test, which runs real simulations (it may
// import runner; package report may not).

// NewTestBrowser is newBrowser for report_test.
func NewTestBrowser(t *testing.T, limit time.Duration) *browser { return newBrowser(t, limit) }

// OpenAndCheck opens path in b and checks it as the browser test does, expecting the plots ids.
func OpenAndCheck(t *testing.T, b *browser, path string, ids []string, page string) {
	t.Helper()
	b.open(t, path, ids).check(t, page)
}

// Plot ids for report_test.
const (
	IDFCT        = idFCT
	IDThroughput = idThroughput
	IDUtil       = idUtil
	IDBusbw      = idBusbw
	IDQueue      = idQueue
	IDEV         = idEV
	IDFaults     = idFaults
	IDPower      = idPower
	IDSteps      = idSteps
	IDStepSeries = idStepSeries
	IDGantt      = idGantt
	IDTopology   = idTopology
	IDCredits    = idCredits
)
