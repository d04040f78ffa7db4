package main

import (
	"bytes"
	"runtime"
	"testing"
)

// TestTransportCompare runs the transport comparison at TransportsSmall and checks the
// orderings physics requires (docs/transport-compare.md, "Orderings").
func TestTransportCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("the transport suite runs every workload under six transports")
	}
	cols := transportCols()
	cells := runTransportSuite(TransportsSmall, cols, runtime.GOMAXPROCS(0))
	var tab bytes.Buffer
	printTransports(&tab, TransportsSmall, cols, cells)
	t.Logf("transport comparison:\n%s", tab.String())
}
