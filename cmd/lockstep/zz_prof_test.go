package main

import (
	"io"
	"os"
	"testing"
)

func TestZZProf(t *testing.T) {
	p := os.Getenv("ZZ_SCEN")
	if p == "" {
		t.Skip()
	}
	execute([]string{"run", p, "--out", t.TempDir()}, io.Discard, os.Stderr)
}
